//! What the text-size programs of OFF2F's experiments (seed 001 fig. 4:
//! `date`, `less`, `gcc`) do in Tessera's place: check the read-only table
//! that makes up most of their text, one page in `STRIDE`, as a program
//! runs a part of its code. The table's size is the program's point; the
//! work touches a fixed share of it, so that the page faults grow with
//! the text as the paper's do.

/// Pages of the table read: one in this many.
pub const STRIDE: usize = 16;
/// Every byte of a table.
pub const FILL: u8 = 0xa5;

/// Exits 0 if every byte read holds `FILL`.
pub fn run(table: &[u8]) -> i32 {
    // Kept opaque: the compiler would otherwise know every byte.
    let table = core::hint::black_box(table);
    let bad = table
        .chunks(4096)
        .step_by(STRIDE)
        .filter(|page| page[0] != FILL || page[page.len() - 1] != FILL)
        .count();
    i32::from(bad != 0)
}
