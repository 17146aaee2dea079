/*
 * Faults: the signal, si_code and si_addr a faulting instruction gets
 * (SIGSEGV for unmapped, read-only, kernel and non-canonical addresses and
 * privileged instructions; SIGILL; SIGFPE for both kinds of integer divide
 * fault; SIGTRAP for int3), a handler that edits the saved registers and
 * resumes (rt_sigreturn), stack overflow caught on the alternate stack, and
 * the default action: the process is killed, also when the signal is
 * blocked or ignored.
 */
#include "abi.h"

#include <sys/resource.h>
#include <ucontext.h>

/* Addresses kept in variables, so that the compiler sees no constant to warn about. */
static volatile char *volatile bad_addr = BAD_PTR;
static volatile char *volatile kernel_addr = (char *)0xffffffff81000000UL;
static volatile char *volatile noncanonical_addr = (char *)0x8000000000000000UL;

static void null_read(void *p)
{
	(void)p;
	(void)*bad_addr;
}

static void text_write(void *p)
{
	*(volatile char *)p = 0;
}

static void kernel_read(void *p)
{
	(void)p;
	(void)*kernel_addr;
}

static void noncanonical_read(void *p)
{
	(void)p;
	(void)*noncanonical_addr;
}

static void *fault_ip;

static void do_ud2(void *p)
{
	(void)p;
	__asm__ volatile("lea 1f(%%rip), %%rax\n\tmov %%rax, fault_ip(%%rip)\n1:\tud2" ::: "rax", "memory");
}

static void do_div0(void *p)
{
	(void)p;
	__asm__ volatile("lea 1f(%%rip), %%rax\n\tmov %%rax, fault_ip(%%rip)\n\t"
			 "xor %%ecx, %%ecx\n\tmov $1, %%eax\n\tcqo\n1:\tidiv %%rcx" ::: "rax", "rcx", "rdx", "memory");
}

static void do_div_overflow(void *p)
{
	(void)p;
	__asm__ volatile("mov $-1, %%ecx\n\tmov $0x80000000, %%eax\n\tcdq\n\tidiv %%ecx" ::: "rax", "rcx", "rdx");
}

static void do_int3(void *p)
{
	(void)p;
	__asm__ volatile("int3");
}

static void do_hlt(void *p)
{
	(void)p;
	__asm__ volatile("hlt");
}

static void do_cli(void *p)
{
	(void)p;
	__asm__ volatile("cli");
}

static void do_in(void *p)
{
	(void)p;
	__asm__ volatile("inb $0x80, %%al" ::: "rax");
}

static const char *code_name(int sig, int code)
{
	static char buf[32];
	if (code == SI_KERNEL)
		return "SI_KERNEL";
	if (sig == SIGSEGV && code == SEGV_MAPERR)
		return "SEGV_MAPERR";
	if (sig == SIGSEGV && code == SEGV_ACCERR)
		return "SEGV_ACCERR";
	if (sig == SIGILL && code == ILL_ILLOPN)
		return "ILL_ILLOPN";
	if (sig == SIGFPE && code == FPE_INTDIV)
		return "FPE_INTDIV";
	if (sig == SIGFPE && code == FPE_INTOVF)
		return "FPE_INTOVF";
	if (sig == SIGTRAP && code == TRAP_BRKPT)
		return "TRAP_BRKPT";
	snprintf(buf, sizeof buf, "code %d", code);
	return buf;
}

/* "SIGSEGV SEGV_MAPERR, si_addr <relation>" for the fault fn causes. */
static void fault(const char *what, void (*fn)(void *), void *arg, const char *want, void *addr)
{
	siginfo_t si;
	int sig = catch_fault(fn, arg, &si);
	char got[128];
	if (!sig) {
		snprintf(got, sizeof got, "no fault");
	} else {
		const char *where = si.si_addr == NULL ? "0" : si.si_addr == addr ? "the address" : "elsewhere";
		snprintf(got, sizeof got, "%s %s, si_addr %s", signame(sig), code_name(sig, si.si_code), where);
	}
	record(strcmp(got, want) == 0, what, got, want);
}

static volatile long resumed_rax;

static void skip_ud2(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	uc->uc_mcontext.gregs[REG_RIP] += 2; /* ud2 is two bytes */
	uc->uc_mcontext.gregs[REG_RAX] = 77;
}

static int recurse(int n)
{
	volatile char pad[1024];
	pad[0] = (char)n;
	if (n > 1000000000)
		return 0;
	return recurse(n + 1) + pad[0];
}

static void overflow(void *p)
{
	(void)p;
	recurse(0);
}

static int child_fault(void *arg)
{
	int how = (int)(long)arg;
	if (how == 1) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGSEGV);
		sigprocmask(SIG_BLOCK, &s, NULL);
	} else if (how == 2) {
		signal(SIGSEGV, SIG_IGN);
	}
	null_read(NULL);
	return 0;
}

static void fault_in_handler(int sig)
{
	(void)sig;
	null_read(NULL);
}

static int child_nested_fault(void *arg)
{
	(void)arg;
	signal(SIGSEGV, fault_in_handler);
	null_read(NULL);
	return 0;
}

static int child_default(void *arg)
{
	void (*fn)(void *) = (void (*)(void *))arg;
	fn(NULL);
	return 0;
}

static int child_overflow(void *arg)
{
	(void)arg;
	struct rlimit rl = { 1 << 20, 1 << 20 };
	setrlimit(RLIMIT_STACK, &rl);
	siginfo_t si;
	int sig = catch_fault(overflow, NULL, &si);
	EXPECT_STR("stack overflow, caught on the alternate stack", signame(sig), "SIGSEGV");
	EXPECT_STR("si_code", code_name(sig, si.si_code), "SEGV_MAPERR");
	return 0;
}

int main(void)
{
	abi_init();

	section("SIGSEGV");
	fault("read of address 8", null_read, NULL, "SIGSEGV SEGV_MAPERR, si_addr the address", BAD_PTR);
	fault("write to the program's code", text_write, (void *)main, "SIGSEGV SEGV_ACCERR, si_addr the address",
	      (void *)main);
	fault("read of a kernel address", kernel_read, NULL, "SIGSEGV SEGV_MAPERR, si_addr the address",
	      (void *)0xffffffff81000000UL);
	/* A general protection fault: no address to report. */
	fault("read of a non-canonical address", noncanonical_read, NULL, "SIGSEGV SI_KERNEL, si_addr 0", NULL);
	fault("hlt", do_hlt, NULL, "SIGSEGV SI_KERNEL, si_addr 0", NULL);
	fault("cli", do_cli, NULL, "SIGSEGV SI_KERNEL, si_addr 0", NULL);
	fault("in from a port", do_in, NULL, "SIGSEGV SI_KERNEL, si_addr 0", NULL);

	section("SIGILL, SIGFPE, SIGTRAP");
	siginfo_t si;
	fault_ip = NULL;
	int sig = catch_fault(do_ud2, NULL, &si);
	EXPECT_STR("ud2", signame(sig), "SIGILL");
	EXPECT_STR("si_code", code_name(sig, si.si_code), "ILL_ILLOPN");
	EXPECT_TRUE("si_addr is the instruction", si.si_addr == fault_ip);
	sig = catch_fault(do_div0, NULL, &si);
	EXPECT_STR("integer divide by zero", signame(sig), "SIGFPE");
	EXPECT_STR("si_code", code_name(sig, si.si_code), "FPE_INTDIV");
	EXPECT_TRUE("si_addr is the instruction", si.si_addr == fault_ip);
	sig = catch_fault(do_div_overflow, NULL, &si);
	/* x86 raises the same exception for INT_MIN / -1; Linux does not tell them apart. */
	EXPECT_STR("INT_MIN / -1", signame(sig), "SIGFPE");
	EXPECT_STR("si_code", code_name(sig, si.si_code), "FPE_INTDIV");
	sig = catch_fault(do_int3, NULL, &si);
	EXPECT_STR("int3", signame(sig), "SIGTRAP");
	EXPECT_STR("si_code", code_name(sig, si.si_code), "SI_KERNEL");

	section("a handler that resumes");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = skip_ud2;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGILL, &sa, NULL);
	long rax;
	__asm__ volatile("mov $1, %%eax\n\tud2\n\tmov %%rax, %0" : "=r"(rax) : : "rax");
	EXPECT_EQ("rax after the handler moved rip past ud2 and set rax", rax, 77);
	signal(SIGILL, SIG_DFL);

	section("stack overflow");
	EXPECT_STATUS("child", in_child(child_overflow, NULL), "exited 0");

	section("default actions");
	EXPECT_STATUS("SIGSEGV not handled", in_child(child_fault, (void *)0), "killed by SIGSEGV");
	EXPECT_STATUS("SIGSEGV blocked", in_child(child_fault, (void *)1), "killed by SIGSEGV");
	EXPECT_STATUS("SIGSEGV ignored", in_child(child_fault, (void *)2), "killed by SIGSEGV");
	EXPECT_STATUS("a fault inside the SIGSEGV handler", in_child(child_nested_fault, NULL), "killed by SIGSEGV");
	EXPECT_STATUS("ud2", in_child(child_default, (void *)do_ud2), "killed by SIGILL");
	EXPECT_STATUS("divide by zero", in_child(child_default, (void *)do_div0), "killed by SIGFPE");
	EXPECT_STATUS("int3", in_child(child_default, (void *)do_int3), "killed by SIGTRAP");
	EXPECT_STATUS("hlt", in_child(child_default, (void *)do_hlt), "killed by SIGSEGV");
	return abi_done();
}
