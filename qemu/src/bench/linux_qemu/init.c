/*
 * kx-linux-init: /init of the initramfs `kx bench` boots Debian's Linux kernel with, for
 * the `linux` reference rows (qemu/src/bench/linux_qemu/mod.rs). Built by kx with
 * `cc -static -O2`; it is the only process of the machine.
 *
 * It mounts proc, sysfs and cgroup2, turns transparent huge pages off (and checks that
 * they are), moves itself into a fresh cgroup v2 memcg `kx` (as the kernel's seed001
 * charges one memcg), reads /kx.conf (written by kx: `cpus=1,2 rounds=R warmup=W
 * seconds_ns=N pages=P mark=0xADDR map=private|shared`) and, at every CPU count and round,
 * starts one thread per CPU, pinned to CPUs 0..cpus-1, each of which repeats mmap (P
 * pages, anonymous, MADV_NOHUGEPAGE; private, or shared: a shmem object per cycle, whose
 * pages are truncated when the munmap drops its last mapping) / store to every 4 KiB page
 * / munmap until the run's seconds are over.
 * Lines on the console (ttyS0), parsed by kx (linux_qemu/report.rs):
 *
 *   KXLINUX ready online=N memcg=1|0 thp=never map=private|shared release=R
 *   KXLINUX run cpus=C round=R ns=NS pgfault=P t=CPU:OPS:NS:MINFLT ...
 *   KXLINUX end
 *   KXLINUX error WHAT
 *   KXSYM ADDR TYPE NAME      (the counted boot only, before the end line)
 *
 * `ns` is from the threads' common start (a barrier) to the last thread's end; each
 * thread's MINFLT is its getrusage(RUSAGE_THREAD) minor-fault delta over its loop, and
 * pgfault the /proc/vmstat delta over the run. kx checks faults against pages touched.
 *
 * With a mark address (not 0: the counted boot), the program tells the coherence plugin
 * where its runs and windows are as the kx kernel does (abi/src/coherence.rs): a store to
 * an offset of the mark page, a page of RAM the command line took out of Linux's memory
 * (`memmap=4K$ADDR`) and mapped here through /dev/mem. RUN_BEGIN before the threads
 * leave the barrier, each thread's WINDOW_BEGIN right before its first mmap and
 * WINDOW_END after its last munmap, RUN_END after every thread was joined. After its
 * runs it copies the text symbols of /proc/kallsyms to the console as KXSYM lines, so
 * that kx names the instructions of the locked RMWs the plugin counted (KASLR is off, so
 * these are the addresses executed; Debian's System.map is a stub that points at the
 * -dbg package).
 *
 * The end: a write to QEMU's isa-debug-exit port 0xf4 (0x31: done, 0x32: failed); if the
 * port cannot be had, power off (QEMU exits 0, which kx reports as "no exit device").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EXIT_PORT 0xf4
#define EXIT_DONE 0x31
#define EXIT_FAILED 0x32
#define PAGE 4096UL
#define MAX_THREADS 256
#define MAX_COUNTS 32
/* The coherence plugin's marks: offsets into the mark page (abi/src/coherence.rs). */
#define MARK_RUN_BEGIN 0x000
#define MARK_WINDOW_BEGIN 0x040
#define MARK_WINDOW_END 0x080
#define MARK_RUN_END 0x0c0

/* The mapped mark page; NULL when the conf has no mark address (the timed boots). */
static volatile uint64_t *mark_page;

static void mark(unsigned long offset)
{
	if (mark_page)
		mark_page[offset / sizeof(uint64_t)] = 1;
}

static void finish(int value)
{
	fflush(stdout);
	/*
	 * The console's UART sends what the tty holds after write() returns: wait until it
	 * has (tcdrain), or the port write below ends QEMU with the last lines (the end
	 * line) still unsent. Not a tty (ENOTTY): nothing to wait for.
	 */
	tcdrain(STDOUT_FILENO);
	if (ioperm(EXIT_PORT, 4, 1) == 0)
		outb((unsigned char)value, EXIT_PORT);
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static void fail(const char *fmt, ...)
{
	va_list ap;
	printf("KXLINUX error ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	finish(EXIT_FAILED);
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/*
 * The kernel's text symbols (types t, T, w, W) from /proc/kallsyms, each as a KXSYM line,
 * written to the console in 64 KiB pieces rather than a write per line (tens of thousands
 * of lines; the copy adds about 7 s to the counted boot). Addresses shown as 0
 * (kptr_restrict) fail the boot rather than name every instruction after the first symbol.
 */
static void print_symbols(void)
{
	static char out[1 << 16];
	size_t used = 0;
	unsigned long n = 0;
	char line[512];
	write_file("/proc/sys/kernel/kptr_restrict", "0");
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		fail("cannot open /proc/kallsyms: %s", strerror(errno));
	fflush(stdout);
	while (fgets(line, sizeof line, f)) {
		char *type = strchr(line, ' ');
		if (!type || !type[1] || !strchr("tTwW", type[1]) || strchr(line, '['))
			continue;
		if (strspn(line, "0") == (size_t)(type - line))
			fail("/proc/kallsyms shows no addresses (kptr_restrict)");
		size_t len = strlen(line);
		if (used + len + 6 > sizeof out) {
			if (write(1, out, used) != (ssize_t)used)
				fail("cannot write the symbols: %s", strerror(errno));
			used = 0;
		}
		memcpy(out + used, "KXSYM ", 6);
		memcpy(out + used + 6, line, len);
		used += len + 6;
		n++;
	}
	fclose(f);
	if (used && write(1, out, used) != (ssize_t)used)
		fail("cannot write the symbols: %s", strerror(errno));
	if (n == 0)
		fail("/proc/kallsyms has no text symbols");
}

static uint64_t vmstat_pgfault(void)
{
	static char buf[16384];
	if (read_file("/proc/vmstat", buf, sizeof buf) != 0)
		fail("cannot read /proc/vmstat: %s", strerror(errno));
	char *p = strstr(buf, "\npgfault ");
	if (!p)
		fail("no pgfault line in /proc/vmstat");
	return strtoull(p + 9, NULL, 10);
}

struct conf {
	unsigned counts[MAX_COUNTS];
	unsigned ncounts;
	unsigned rounds, warmup;
	uint64_t seconds_ns;
	unsigned long pages;
	unsigned long long mark;
	int shared;
};

static void read_conf(struct conf *c)
{
	char buf[1024], list[512], map[16];
	if (read_file("/kx.conf", buf, sizeof buf) != 0)
		fail("cannot read /kx.conf: %s", strerror(errno));
	unsigned long long secs;
	if (sscanf(buf,
		   "cpus=%511s rounds=%u warmup=%u seconds_ns=%llu pages=%lu mark=%llx map=%15s",
		   list, &c->rounds, &c->warmup, &secs, &c->pages, &c->mark, map) != 7)
		fail("/kx.conf is not `cpus=L rounds=R warmup=W seconds_ns=N pages=P mark=A "
		     "map=M`: %s",
		     buf);
	if (strcmp(map, "private") != 0 && strcmp(map, "shared") != 0)
		fail("/kx.conf: map=%s is neither private nor shared", map);
	c->shared = strcmp(map, "shared") == 0;
	c->seconds_ns = secs;
	c->ncounts = 0;
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		if (c->ncounts == MAX_COUNTS)
			fail("more than %d CPU counts", MAX_COUNTS);
		c->counts[c->ncounts++] = (unsigned)strtoul(t, NULL, 10);
	}
	if (c->ncounts == 0 || c->pages == 0 || c->seconds_ns == 0 || c->rounds == 0)
		fail("/kx.conf has an empty list or a zero: %s", buf);
}

struct worker {
	pthread_t tid;
	unsigned cpu;
	unsigned long pages;
	int flags;
	uint64_t seconds_ns;
	pthread_barrier_t *start;
	uint64_t ops, ns, minflt, end;
	int err;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
		w->err = 1;
	}
	size_t len = w->pages * PAGE;
	struct rusage before, after;
	pthread_barrier_wait(w->start);
	if (w->err)
		return NULL;
	getrusage(RUSAGE_THREAD, &before);
	mark(MARK_WINDOW_BEGIN);
	uint64_t t0 = now_ns(), deadline = t0 + w->seconds_ns, t;
	uint64_t ops = 0;
	do {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, w->flags, -1, 0);
		if (p == MAP_FAILED) {
			w->err = 2;
			return NULL;
		}
		if (madvise((void *)p, len, MADV_NOHUGEPAGE) != 0) {
			w->err = 3;
			return NULL;
		}
		for (unsigned long i = 0; i < w->pages; i++)
			p[i * PAGE] = 1;
		munmap((void *)p, len);
		ops += w->pages;
		t = now_ns();
	} while (t < deadline);
	mark(MARK_WINDOW_END);
	getrusage(RUSAGE_THREAD, &after);
	w->ops = ops;
	w->ns = t - t0;
	w->end = t;
	w->minflt = (uint64_t)(after.ru_minflt - before.ru_minflt);
	return NULL;
}

static void run(const struct conf *c, unsigned cpus, unsigned round)
{
	static struct worker w[MAX_THREADS];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, cpus + 1);
	for (unsigned i = 0; i < cpus; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].cpu = i;
		w[i].pages = c->pages;
		w[i].flags = MAP_ANONYMOUS | (c->shared ? MAP_SHARED : MAP_PRIVATE);
		w[i].seconds_ns = c->seconds_ns;
		w[i].start = &start;
		if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
			fail("cannot start thread %u: %s", i, strerror(errno));
	}
	uint64_t pg0 = vmstat_pgfault();
	mark(MARK_RUN_BEGIN);
	pthread_barrier_wait(&start);
	uint64_t t0 = now_ns(), end = t0;
	for (unsigned i = 0; i < cpus; i++) {
		pthread_join(w[i].tid, NULL);
		if (w[i].err == 1)
			fail("cannot pin thread %u to CPU %u", i, w[i].cpu);
		if (w[i].err == 2)
			fail("mmap failed on CPU %u", w[i].cpu);
		if (w[i].err == 3)
			fail("madvise(MADV_NOHUGEPAGE) failed on CPU %u", w[i].cpu);
		if (w[i].end > end)
			end = w[i].end;
	}
	mark(MARK_RUN_END);
	uint64_t pg1 = vmstat_pgfault();
	pthread_barrier_destroy(&start);
	printf("KXLINUX run cpus=%u round=%u ns=%llu pgfault=%llu", cpus, round,
	       (unsigned long long)(end - t0), (unsigned long long)(pg1 - pg0));
	for (unsigned i = 0; i < cpus; i++)
		printf(" t=%u:%llu:%llu:%llu", w[i].cpu, (unsigned long long)w[i].ops,
		       (unsigned long long)w[i].ns, (unsigned long long)w[i].minflt);
	printf("\n");
	fflush(stdout);
}

/*
 * The counted boot's command line asks Linux to keep its `lock` prefixes on one CPU
 * (`noreplace-smp`). Linux hands a parameter it does not know to init as an argument
 * (one without `=`): a kernel that ignored this one would have rewritten its locks and
 * the plugin would count almost none, so that is an error, not a figure.
 */
static void check_known(int argc, char **argv, const char *param)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], param) == 0)
			fail("this kernel does not know `%s` (it was passed to init): its locked "
			     "RMWs would not be counted",
			     param);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	if (mount("proc", "/proc", "proc", 0, NULL) != 0)
		fail("cannot mount /proc: %s", strerror(errno));
	if (mount("sysfs", "/sys", "sysfs", 0, NULL) != 0)
		fail("cannot mount /sys: %s", strerror(errno));
	char thp[256];
	if (write_file("/sys/kernel/mm/transparent_hugepage/enabled", "never") != 0 ||
	    read_file("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp) != 0 ||
	    !strstr(thp, "[never]"))
		fail("cannot turn transparent huge pages off");
	int memcg = mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL) == 0 &&
		    write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory") == 0 &&
		    mkdir("/sys/fs/cgroup/kx", 0755) == 0 &&
		    write_file("/sys/fs/cgroup/kx/cgroup.procs", "0") == 0;
	struct conf c;
	read_conf(&c);
	if (c.shared &&
	    (write_file("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "never") != 0 ||
	     read_file("/sys/kernel/mm/transparent_hugepage/shmem_enabled", thp, sizeof thp) != 0 ||
	     !strstr(thp, "[never]")))
		fail("cannot turn huge pages off for shmem");
	if (c.mark) {
		check_known(argc, argv, "noreplace-smp");
		int fd = open("/dev/mem", O_RDWR | O_SYNC);
		if (fd < 0)
			fail("cannot open /dev/mem for the mark page: %s", strerror(errno));
		void *m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)c.mark);
		if (m == MAP_FAILED)
			fail("cannot map the mark page at %#llx from /dev/mem: %s", c.mark,
			     strerror(errno));
		mark_page = m;
	}
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	struct utsname u;
	uname(&u);
	printf("KXLINUX ready online=%ld memcg=%d thp=never map=%s release=%s\n", online,
	       memcg, c.shared ? "shared" : "private", u.release);
	for (unsigned k = 0; k < c.ncounts; k++) {
		unsigned cpus = c.counts[k];
		if (cpus == 0 || cpus > MAX_THREADS || (long)cpus > online)
			fail("%u CPUs asked, %ld online", cpus, online);
		for (unsigned r = 0; r < c.warmup + c.rounds; r++)
			run(&c, cpus, r < c.warmup ? 0 : r - c.warmup + 1);
	}
	if (c.mark)
		print_symbols();
	printf("KXLINUX end\n");
	finish(EXIT_DONE);
	return 0;
}
