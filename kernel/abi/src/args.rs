//! How a system call's arguments travel in registers, defined once for both
//! sides. Each argument has a type that says what it is (a plain number, a
//! resource identifier, a buffer, a structure to read or to fill, one of
//! the ABI's enumerations) and implements [`Arg`]: how many registers it
//! takes, how the user runtime puts a Rust value into them, and how the
//! kernel reads them back into the typed value its handler receives
//! (checking what can be checked without touching user memory: enumeration
//! values, lengths; user addresses are the kernel's to check against the
//! caller's space). The list of calls (`syscalls!` in lib.rs) uses these
//! types; from it come the kernel's typed argument structures and the
//! runtime's wrappers, so the two sides cannot disagree.

use crate::Error;
use core::marker::PhantomData;

/// A system-call argument.
pub trait Arg: Sized + Copy {
    /// What the user runtime's wrapper takes for it.
    type User<'a>;
    /// Registers it takes.
    const REGS: usize;
    /// Puts a user value into `regs[..REGS]`.
    fn encode(user: Self::User<'_>, regs: &mut [u64]);
    /// Reads it back from `regs[..REGS]` (the kernel's side).
    fn decode(regs: &[u64]) -> Result<Self, Error>;
}

impl Arg for u64 {
    type User<'a> = u64;
    const REGS: usize = 1;
    #[inline(always)]
    fn encode(user: u64, regs: &mut [u64]) {
        regs[0] = user;
    }
    #[inline(always)]
    fn decode(regs: &[u64]) -> Result<u64, Error> {
        Ok(regs[0])
    }
}

/// A range of user memory: address and length, in two registers. What the
/// kernel may do with it (read, write) is the argument type's: `In`, `Out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    pub addr: u64,
    pub len: u64,
}

/// An argument that is a `Buffer`: its type, what the user runtime gives
/// for it, and how that gives the address and length.
macro_rules! buffer_arg {
    ($(#[$doc:meta])* $name:ident: $user:ty => |$u:ident| $parts:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(pub Buffer);

        impl Arg for $name {
            type User<'a> = $user;
            const REGS: usize = 2;
            #[inline(always)]
            fn encode($u: Self::User<'_>, regs: &mut [u64]) {
                (regs[0], regs[1]) = $parts;
            }
            #[inline(always)]
            fn decode(regs: &[u64]) -> Result<$name, Error> {
                Ok($name(Buffer { addr: regs[0], len: regs[1] }))
            }
        }
    };
}

buffer_arg! {
    /// Bytes the kernel reads (a message, a name, a path).
    Bytes: &'a [u8] => |b| (b.as_ptr() as u64, b.len() as u64)
}

buffer_arg! {
    /// Text the kernel reads (UTF-8, checked by the kernel when it reads it).
    Str: &'a str => |s| (s.as_ptr() as u64, s.len() as u64)
}

buffer_arg! {
    /// Room the kernel writes into (a reply, text, a list).
    BytesMut: &'a mut [u8] => |b| (b.as_mut_ptr() as u64, b.len() as u64)
}

buffer_arg! {
    /// A rendezvous message: bytes of the caller's memory, or (with the
    /// entry's `CALL_BY_REF` flag) a call the caller holds, whose message is
    /// passed on. The kernel reads which from the entry.
    Message: MessageOf<'a> => |m| match m {
        MessageOf::Bytes(b) => (b.as_ptr() as u64, b.len() as u64),
        MessageOf::Held(rid) => (rid, 0),
    }
}

/// What the user runtime gives as a `Message`.
#[derive(Debug, Clone, Copy)]
pub enum MessageOf<'a> {
    Bytes(&'a [u8]),
    /// A held call's rid.
    Held(u64),
}

buffer_arg! {
    /// Room the kernel writes into later, after the call has returned (a
    /// non-blocking request's reply): the runtime hands it over as a raw
    /// pointer, whose memory it must keep until the result is fetched.
    Room: *mut [u8] => |r| (r as *mut u8 as u64, r.len() as u64)
}

/// `Clone` and `Copy` for argument types generic over the structure they
/// point at, whatever that is (derive would ask it to be `Copy`).
macro_rules! copy_for_any {
    ($($name:ident),*) => {$(
        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $name<T> {}
    )*};
}

copy_for_any!(In, InOpt, Out, List);

/// An argument that is the address of a structure (one register): its
/// type, what the user runtime gives for it, and how that gives the address.
macro_rules! address_arg {
    ($(#[$doc:meta])* $name:ident: $user:ty => |$u:ident| $addr:expr) => {
        $(#[$doc])*
        #[derive(Debug, PartialEq, Eq)]
        pub struct $name<T> {
            pub addr: u64,
            _t: PhantomData<fn() -> T>,
        }

        impl<T> $name<T> {
            pub const fn at(addr: u64) -> $name<T> {
                $name { addr, _t: PhantomData }
            }
        }

        impl<T: 'static> Arg for $name<T> {
            type User<'a> = $user;
            const REGS: usize = 1;
            #[inline(always)]
            fn encode($u: Self::User<'_>, regs: &mut [u64]) {
                regs[0] = $addr;
            }
            #[inline(always)]
            fn decode(regs: &[u64]) -> Result<$name<T>, Error> {
                Ok($name::at(regs[0]))
            }
        }
    };
}

address_arg! {
    /// A structure the kernel reads, at an address (one register).
    In: &'a T => |t| t as *const T as u64
}

address_arg! {
    /// A structure the kernel fills, at an address (one register).
    Out: &'a mut T => |t| t as *mut T as u64
}

/// A structure the kernel may read if given (0: none).
#[derive(Debug, PartialEq, Eq)]
pub struct InOpt<T>(pub Option<In<T>>);

impl<T: 'static> Arg for InOpt<T> {
    type User<'a> = Option<&'a T>;
    const REGS: usize = 1;
    #[inline(always)]
    fn encode(user: Option<&T>, regs: &mut [u64]) {
        regs[0] = user.map_or(0, |u| u as *const T as u64);
    }
    #[inline(always)]
    fn decode(regs: &[u64]) -> Result<InOpt<T>, Error> {
        Ok(InOpt((regs[0] != 0).then(|| In::at(regs[0]))))
    }
}

/// A list of structures the kernel reads and may write back into (their
/// `status` fields): address and count.
#[derive(Debug, PartialEq, Eq)]
pub struct List<T> {
    pub addr: u64,
    pub count: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> List<T> {
    pub const fn at(addr: u64, count: u64) -> List<T> {
        List {
            addr,
            count,
            _t: PhantomData,
        }
    }

    /// Its length in bytes, if that fits.
    pub fn bytes(&self) -> Option<usize> {
        usize::try_from(self.count).ok()?.checked_mul(core::mem::size_of::<T>())
    }
}

impl<T: 'static> Arg for List<T> {
    type User<'a> = &'a mut [T];
    const REGS: usize = 2;
    #[inline(always)]
    fn encode(user: &mut [T], regs: &mut [u64]) {
        regs[0] = user.as_mut_ptr() as u64;
        regs[1] = user.len() as u64;
    }
    #[inline(always)]
    fn decode(regs: &[u64]) -> Result<List<T>, Error> {
        Ok(List::at(regs[0], regs[1]))
    }
}

/// One of the ABI's numbered enumerations (`numbered!`), checked on the way in.
macro_rules! enum_arg {
    ($($t:ty),*) => {$(
        impl $crate::args::Arg for $t {
            type User<'a> = $t;
            const REGS: usize = 1;
            #[inline(always)]
            fn encode(user: $t, regs: &mut [u64]) {
                regs[0] = user as u64;
            }
            #[inline(always)]
            fn decode(regs: &[u64]) -> Result<$t, $crate::Error> {
                <$t>::from_u64(regs[0]).ok_or($crate::Error::Invalid)
            }
        }
    )*};
}
pub(crate) use enum_arg;

/// Defines the system calls from the one list (`each_call!` hands it
/// here): the numbers (`Sys`), one argument structure per call (module
/// `call`, decoded from the six registers by the kernel) and the decoded
/// call (`Call`). A list entry reads
/// `/// doc` `Name = number, function(arg: Type, ...);`.
macro_rules! syscalls {
    ($(
        $(#[$doc:meta])*
        $name:ident = $n:literal, $func:ident($($arg:ident: $ty:ty),* $(,)?);
    )*) => {
        /// System-call numbers.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u64)]
        pub enum Sys { $($(#[$doc])* $name = $n,)* }

        impl Sys {
            pub const ALL: &'static [Sys] = &[$(Sys::$name,)*];
            pub fn from_u64(n: u64) -> Option<Sys> {
                match n { $($n => Some(Sys::$name),)* _ => None }
            }
            pub fn name(self) -> &'static str {
                match self { $(Sys::$name => stringify!($func),)* }
            }
        }

        /// Each call's arguments, as the kernel's handler receives them.
        pub mod call {
            #[allow(unused_imports)]
            use $crate::args::*;
            #[allow(unused_imports)]
            use $crate::*;
            $(
                $(#[$doc])*
                #[derive(Debug, Clone, Copy)]
                pub struct $name { $(pub $arg: $ty,)* }

                impl $name {
                    /// Reads the arguments from the six argument registers.
                    #[inline(always)]
                    #[allow(unused_assignments, unused_mut, unused_variables)]
                    pub fn decode(regs: &[u64; 6]) -> Result<$name, $crate::Error> {
                        const { assert!(0 $(+ <$ty as Arg>::REGS)* <= 6, "more than six registers of arguments") };
                        let mut at = 0;
                        Ok($name { $($arg: {
                            let v = <$ty as Arg>::decode(&regs[at..at + <$ty as Arg>::REGS])?;
                            at += <$ty as Arg>::REGS;
                            v
                        },)* })
                    }
                }
            )*
        }

        /// What serves the system calls: one method per call, taking its
        /// decoded arguments (the kernel implements it; a call without a
        /// method does not compile).
        pub trait Serve {
            type Out;
            $($(#[$doc])* fn $func(&mut self, args: call::$name) -> Self::Out;)*
            /// A number nobody defines (`NoSys`), or arguments that cannot be
            /// what the call takes (`Invalid`).
            fn refuse(&mut self, e: $crate::Error) -> Self::Out;
        }

        /// Decodes call `number`'s arguments from the six registers and
        /// hands them to `s`'s method for it: one switch on the number.
        #[inline(always)]
        pub fn serve<S: Serve>(s: &mut S, number: u64, regs: &[u64; 6]) -> S::Out {
            match number {
                $($n => match call::$name::decode(regs) {
                    Ok(a) => s.$func(a),
                    Err(e) => s.refuse(e),
                },)*
                _ => s.refuse($crate::Error::NoSys),
            }
        }

        /// A system call, decoded: its number and its typed arguments.
        #[derive(Debug, Clone, Copy)]
        pub enum Call { $($name(call::$name),)* }

        impl Call {
            /// Call `number` with the six argument registers; `NoSys` for a
            /// number nobody defines, `Invalid` for an argument that cannot
            /// be what the call takes.
            #[inline(always)]
            pub fn decode(number: u64, regs: &[u64; 6]) -> Result<Call, $crate::Error> {
                match number {
                    $($n => call::$name::decode(regs).map(Call::$name),)*
                    _ => Err($crate::Error::NoSys),
                }
            }
        }

    };
}
pub(crate) use syscalls;

/// Puts the arguments of a call into the six registers (the user
/// runtime's wrappers, made by `each_call!`, use it).
#[macro_export]
macro_rules! encode_args {
    ($($arg:ident: $ty:ty),*) => {{
        #[allow(unused_mut)]
        let mut regs = [0u64; 6];
        #[allow(unused_mut, unused_variables)]
        let mut at = 0;
        $(
            <$ty as $crate::args::Arg>::encode($arg, &mut regs[at..at + <$ty as $crate::args::Arg>::REGS]);
            at += <$ty as $crate::args::Arg>::REGS;
        )*
        regs
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<A: Arg + PartialEq + core::fmt::Debug>(user: A::User<'_>) -> (A, [u64; 6]) {
        let mut regs = [0u64; 6];
        A::encode(user, &mut regs[..A::REGS]);
        (A::decode(&regs[..A::REGS]).unwrap(), regs)
    }

    #[test]
    fn buffers_take_two_registers_in_order() {
        let data = [1u8, 2, 3];
        let (b, regs): (Bytes, _) = round_trip(&data[..]);
        assert_eq!(
            b.0,
            Buffer {
                addr: data.as_ptr() as u64,
                len: 3
            }
        );
        assert_eq!(regs[1], 3);
        let (s, _): (Str, _) = round_trip("abcd");
        assert_eq!(s.0.len, 4);
    }

    #[test]
    fn structures_travel_by_address() {
        let mut x = 7u64;
        let at = &mut x as *mut u64 as u64;
        let (o, _): (Out<u64>, _) = round_trip(&mut x);
        assert_eq!(o.addr, at);
        let (none, regs): (InOpt<u64>, _) = round_trip(None);
        assert_eq!((none.0, regs[0]), (None, 0));
    }

    #[allow(dead_code)]
    mod sample {
        syscalls! {
            /// A call with no arguments.
            Nothing = 0, nothing();
            /// Two of them, three registers.
            Named = 7, named(name: Str, mode: crate::ContainerMode);
            Info = 9, info(pid: u64, out: In<crate::Clock>);
        }
    }

    #[test]
    fn calls_decode_by_number_into_typed_arguments() {
        use sample::{Call, Sys};
        assert_eq!(Sys::from_u64(7), Some(Sys::Named));
        assert_eq!(Sys::Named.name(), "named");
        let regs = [0x1000, 5, crate::ContainerMode::Share as u64, 0, 0, 0];
        match Call::decode(7, &regs) {
            Ok(Call::Named(a)) => {
                assert_eq!((a.name.0.addr, a.name.0.len), (0x1000, 5));
                assert_eq!(a.mode, crate::ContainerMode::Share);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(Call::decode(7, &[0, 0, 99, 0, 0, 0]), Err(Error::Invalid)));
        assert!(matches!(Call::decode(8, &regs), Err(Error::NoSys)));
        assert!(
            matches!(Call::decode(9, &[3, 0x2000, 0, 0, 0, 0]), Ok(Call::Info(a)) if a.pid == 3 && a.out.addr == 0x2000)
        );
        let encoded = {
            let name = "abc";
            let mode = crate::ContainerMode::Move;
            crate::encode_args!(name: Str, mode: crate::ContainerMode)
        };
        assert_eq!(encoded[1], 3);
        assert_eq!(encoded[2], crate::ContainerMode::Move as u64);
    }

    #[test]
    fn enumerations_are_checked() {
        let (m, _): (crate::ContainerMode, _) = round_trip(crate::ContainerMode::Swap);
        assert_eq!(m, crate::ContainerMode::Swap);
        assert_eq!(crate::ContainerMode::decode(&[99]), Err(Error::Invalid));
    }
}
