/* The recorder's life in a process: start-up, fork, exec, exit.  A
 * trace starts with the image and with every forked child that is
 * followed; it ends with the image (exit, _exit, exec), its end record
 * counting everything recorded. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../base/rmem.h"
#include "internal.h"
#include "python.h"
#include "records.h"
#include "stacks.h"
#include "unwind.h"

__thread struct tstate hs_thread HS_TLS;
struct recorder hs_rec;
static struct live live_none; /* before start-up: nothing is recorded */
struct live *hs_live = &live_none;
int hs_started;
int hs_begun;
uint64_t hs_before_allocs, hs_before_bytes;
__thread unsigned hs_before_mine __attribute__((tls_model("initial-exec")));

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec -
	       hs_rec.start_ns;
}

uint64_t ns_until(uint64_t deadline)
{
	uint64_t now = now_ns();
	return deadline > now ? deadline - now : 0;
}

static void start_clock(void)
{
	sampler_restart();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	hs_rec.start_ns =
		(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void start_trace_file(unsigned options, int adopt)
{
	if (hs_settings.record_mmap)
		options |= HS_OPT_MAPS;
	__atomic_store_n(&hs_begun, 1, __ATOMIC_RELAXED);
	hs_started = 1;
	hs_live->owner = 1;
	if (trace_open(adopt) || trace_write_header(options))
		return;
	/* once it is a trace: `record` may look at it as soon as it knows */
	trace_report();
	sampler_open();
	hs_live->on = 1;
	buffer_start();
	events_modules_changed();
	internal_begin();
	writer_start();
	internal_end();
}

/* Starts a new trace in this process: file, header, modules, writer. */
static void start_trace(unsigned options, int adopt)
{
	int cancel;
	/* open, write, connect: cancellation points, in a forked child's
	 * fork() */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	start_trace_file(options, adopt);
	pthread_setcancelstate(cancel, NULL);
}

/* The page of what a child made without fork()'s handlers must not
 * inherit.  Without MADV_WIPEONFORK (Linux < 4.14) such a child is only
 * noticed when it would wait for its absent writer (buffer_reserve). */
static void live_map(void)
{
	struct live *l = rmem_map(sizeof(*l));
	if (!l)
		return;
	(void)madvise(l, (size_t)getpagesize(), MADV_WIPEONFORK);
	hs_live = l;
}

/* In a new process: the parent's trace and statm are never ours to
 * write or read; but the program may have put files of its own on those
 * numbers. */
static void drop_parent_files(void)
{
	trace_let_go();
	sampler_close();
}

/* Programs the orphan executes are recorded: they start a trace of
 * their own. */
void recorder_orphan(void)
{
	if (!__atomic_exchange_n(&hs_started, 0, __ATOMIC_RELAXED))
		return;
	hs_thread.tid = 0; /* the parent's */
	drop_parent_files();
	hs_say("heapslope: process %d was made without fork() (clone or "
	       "_Fork): it is not recorded, programs it executes are",
	       (int)getpid());
}

/* Whether this image is the one `heapslope record` started, rather than a
 * descendant or an image exec'd after it (for --no-follow). */
static int first_image(void)
{
	return hs_env.root_pid == (long)getpid() &&
	       hs_env.execed_pid != hs_env.root_pid;
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

void recorder_init(int argc, char **argv)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	busy_enter(t);
	internal_begin();
	R->argc = argc;
	R->argv = argv;
	hs_say_init();
	R->pid = getpid();
	R->gen = 1;
	settings_read();
	exiting_init();
	python_init(hs_settings.python);
	start_clock();
	live_map();
	if (!hs_settings.follow && !first_image())
		goto out; /* --no-follow: a descendant, not recorded */
	if (unwind_init(hs_env.unwind)) {
		hs_fail("unknown " HS_ENV_UNWIND " method", 0);
		goto out;
	}
	if (writer_create() || buffer_create() || stacks_create() ||
	    events_modules_create()) {
		hs_fail("cannot allocate recorder buffers", ENOMEM);
		goto out;
	}
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	(void)rlock_setup(); /* still one thread: registering is quick */
	unsigned options = 0;
	if (hs_env.execed_pid == (long)getpid())
		options |= HS_OPT_EXECED;
	start_trace(options, 1);
	if (hs_live->on)
		signals_arm();
out:
	__atomic_store_n(&hs_begun, 1, __ATOMIC_RELAXED); /* counted or not */
	if (!hs_started)
		trace_drop_token();
	internal_end();
	busy_leave(t);
}

/* Lock held, the writer stopped (or, at exec, idle): everything buffered,
 * then the end record; sig: the signal the process dies of, 0 if none. */
static void write_end(unsigned reason, const char *exec_path, int sig)
{
	struct recorder *R = &hs_rec;
	/* static: this may run on a handler's small alternate stack */
	static uint8_t end[HS_SIGNAL_MAX + RECORDS_END_MAX];
	/* first let the writer finish, since other threads may append while
	 * we wait: the end record's counts must include them */
	if (hs_live->on && buffer_wait_idle() == 0 && hs_live->on) {
		uint8_t *p = sig ? enc_signal(end, (uint64_t)sig) : end;
		size_t n = (size_t)(p - end) +
			   records_end(p, reason, exec_path,
				       R->failed ? R->stop_reason : NULL,
				       R->counts);
		if (buffer_flush(end, n) == 0)
			R->ended = 1;
		/* nothing after the end record: at exec the other threads
		 * still run until the kernel replaces the image */
		hs_live->on = 0;
	}
}

static void finish(unsigned reason, const char *exec_path)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	/* a vfork child shares our memory: it must not touch the trace */
	if (!hs_started || getpid() != R->pid)
		return;
	if (R->ended) {
		/* the writer wrote the stop chunk, or still is: the image must
		 * not end under it */
		if (R->failed)
			writer_stop();
		return;
	}
	busy_enter(t);
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (rlock_owned(&R->lock, hs_tid())) {
		/* the program exits (or execs) from a handler of its that ran
		 * in code of ours holding the lock: that code never goes on,
		 * and what it half wrote cannot be told.  Recording stops;
		 * with nothing appended any more, the lock can be let go and
		 * what was recorded written out */
		hs_fail("the program ended from a signal handler that "
			"interrupted the recorder", 0);
		rlock_give(&R->lock);
	}
	/* at exec the writer may go on (exec can fail); after a failure it
	 * is done, and the stop chunk below must not race its compression */
	if (reason != HS_END_EXEC || R->failed)
		writer_stop();
	rec_lock();
	write_end(reason, exec_path, 0);
	if (R->failed) {
		if (writer_running()) { /* it may hold a buffer in hand */
			rec_unlock();
			writer_stop();
			rec_lock();
		}
		R->finishing = 1;
		trace_write_stop();
	}
	rec_unlock();
	pthread_setcancelstate(cancel, NULL);
	busy_leave(t);
}

void recorder_end(unsigned reason)
{
	finish(reason, NULL);
}

void recorder_before_exec(const char *path)
{
	finish(HS_END_EXEC, path ? path : "");
}

/* How long the last words may take: the thread may have stopped holding
 * what the writer or another thread waits for (the loader's lock, an
 * arena's, a realloc's hold on ours), and the process must die all the
 * same, the trace then ending at its last whole chunk as it would have. */
#define LAST_WORDS_NS (2000 * 1000000ull)

/* A thread writes the last words; a forked child starts without. */
static int last_words_claimed;

int recorder_mid_update(void)
{
	return rlock_owned(&hs_rec.lock, hs_tid()) && !hs_guard.real;
}

void recorder_end_signal(int sig)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	if (!hs_started || getpid() != R->pid || !hs_live->on || R->ended)
		return;
	int self = hs_tid();
	/* the recorder's own code stopped half way (a realloc's call of the
	 * allocator, which holds our lock, is not ours: it never returns,
	 * and nothing of it was written) */
	if (writer_self(self) ||
	    (rlock_owned(&R->lock, self) && !hs_guard.real))
		return;
	uint64_t deadline = now_ns() + LAST_WORDS_NS;
	if (__atomic_exchange_n(&last_words_claimed, 1, __ATOMIC_ACQ_REL)) {
		/* another thread writes them, and then ends the process: the
		 * lock a realloc in flight holds must not stop it */
		if (rlock_owned(&R->lock, self))
			rlock_give(&R->lock);
		while (now_ns() < deadline)
			hs_nap();
		return;
	}
	busy_enter(t);
	internal_begin();
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (rlock_owned(&R->lock, self))
		rlock_give(&R->lock);
	if (writer_stop_by(deadline) == 0 &&
	    rlock_take_within(&R->lock, self, ns_until(deadline)) == 0) {
		write_end(HS_END_SIGNAL, NULL, sig);
		rlock_give(&R->lock);
	}
	pthread_setcancelstate(cancel, NULL);
	internal_end();
	busy_leave(t);
}

int recorder_writer_pause(void)
{
	struct tstate *t = &hs_thread;
	if (!hs_started || getpid() != hs_rec.pid || t->busy ||
	    !writer_running())
		return 0;
	busy_enter(t);
	internal_begin();
	writer_stop_reaped();
	internal_end();
	busy_leave(t);
	return 1;
}

void recorder_writer_resume(int paused)
{
	struct tstate *t = &hs_thread;
	if (!paused)
		return;
	busy_enter(t);
	internal_begin();
	if (hs_live->on)
		writer_start();
	internal_end();
	busy_leave(t);
}

void recorder_exec_failed(void)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	if (R->failed || hs_live->on || !hs_started || getpid() != R->pid ||
	    !trace_has_fd() || rlock_owned(&R->lock, hs_tid()))
		return;
	busy_enter(t);
	writer_join(); /* it ended when recording stopped */
	rec_lock();
	R->ended = 0;
	hs_live->on = 1;
	rec_unlock();
	internal_begin();
	writer_start();
	internal_end();
	busy_leave(t);
}

/* The environment for the new image: the program's, with
 * HEAPSLOPE_EXECED naming this process (so that the image knows it was
 * exec'd here, and what the image before it left is not taken for that);
 * under --no-follow, or when the recorder's file cannot be read from
 * here, without the recorder in LD_PRELOAD.  Made in `room`
 * when it fits (4 KiB of the caller's stack: threads may have small
 * ones), else in memory mapped for it (*map, *map_size; exec replaces
 * it, or the caller unmaps it).  If no room can be had, the program's
 * own environment goes on unchanged. */
static size_t env_count(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

char *const *recorder_exec_env(char *const envp[], char *room, size_t cap,
			       void **map, size_t *map_size)
{
	static const char execed[] = HS_ENV_EXECED "=",
			  preload[] = "LD_PRELOAD=";
	Dl_info self;
	*map = NULL;
	if (!envp)
		return envp;
	/* left out under --no-follow, and when the new image could not load
	 * it (a chroot, a seccomp filter): the loader would say so on the
	 * program's stderr */
	const char *lib = dladdr((void *)recorder_init, &self) &&
				  self.dli_fname &&
				  (!hs_settings.follow ||
				   access(self.dli_fname, R_OK))
				  ? self.dli_fname
				  : NULL;
	size_t n = env_count(envp), text = 64;
	for (size_t i = 0; lib && i < n; i++)
		if (!strncmp(envp[i], preload, sizeof(preload) - 1))
			text += strlen(envp[i]) + 1;
	size_t need = (n + 2) * sizeof(char *) + text;
	char *buf = room;
	if (need > cap) {
		buf = rmem_map(need);
		if (!buf)
			return envp;
		*map = buf;
		*map_size = need;
	}
	char **out = (char **)buf;
	char *o = buf + (n + 2) * sizeof(char *);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *v = envp[i];
		if (!strncmp(v, execed, sizeof(execed) - 1))
			continue;
		if (lib && !strncmp(v, preload, sizeof(preload) - 1)) {
			/* the list without our library, as the loader splits
			 * it: on spaces and colons (never longer than it was) */
			size_t l = sizeof(preload) - 1, ll = strlen(lib);
			memcpy(o, preload, l);
			for (const char *s = v + l; *s;) {
				size_t w = strcspn(s, ": ");
				if (w && !(w == ll && !memcmp(s, lib, w))) {
					if (l > sizeof(preload) - 1)
						o[l++] = ' ';
					memcpy(o + l, s, w);
					l += w;
				}
				s += w + (s[w] != 0);
			}
			o[l++] = 0;
			v = o;
			o += l;
		}
		out[k++] = (char *)v;
	}
	snprintf(o, 64, "%s%d", execed, (int)getpid());
	out[k++] = o;
	out[k] = NULL;
	return out;
}

void recorder_abandoned(void)
{
	struct recorder *R = &hs_rec;
	int self = hs_tid();
	rec_unrecorded();
	unwind_forget();
	events_forget_thread();
	hs_guard.internal = 0;
	hs_guard.real = 0;
	if (lock_owned(&R->mod_lock, self))
		lock_give(&R->mod_lock);
	if (lock_owned(&hs_live->table_lock, self))
		lock_give(&hs_live->table_lock);
	if (rlock_owned(&R->lock, self)) {
		/* what the section had half written cannot be told apart */
		hs_fail("a signal handler left the recorder with longjmp", 0);
		rlock_give(&R->lock);
	}
	sampler_abandoned(self);
}

static void fork_prepare(void)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	int self = hs_tid();
	busy_enter(t);
	R->on_at_fork = hs_live->on;
	/* fork() from a handler that interrupted the recorder: a lock is
	 * this thread's, the child just will not record */
	t->fork_nested = rlock_owned(&R->lock, self) ||
			 lock_owned(&R->mod_lock, self) ||
			 sampler_owned(self) ||
			 lock_owned(&hs_live->table_lock, self);
	if (t->fork_nested)
		return;
	sampler_fork_prepare();
	lock_take(&hs_live->table_lock, self);
	lock_take(&R->mod_lock, self);
	rlock_take(&R->lock, self);
}

static void fork_parent(void)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	if (!t->fork_nested) {
		rlock_give(&R->lock);
		lock_give(&R->mod_lock);
		lock_give(&hs_live->table_lock);
		sampler_fork_parent();
	}
	busy_leave(t);
}

static void fork_child(void)
{
	struct recorder *R = &hs_rec;
	struct tstate *t = &hs_thread;
	/* fork() is no cancellation point; our close, open and write are:
	 * a cancellation pending in the thread must not act here */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	/* other threads are gone: nobody holds them */
	rlock_reset(&R->lock);
	(void)rlock_setup(); /* the child's own memory: registered anew */
	R->mod_lock.v = 0;
	hs_live->table_lock.v = 0; /* wiped already, unless madvise failed */
	t->tid = 0;
	R->pid = getpid();
	writer_forget();
	buffer_reset();
	R->ended = 0;
	R->exiting = 0;
	last_words_claimed = 0;
	events_forget_thread();
	signals_forget(t);
	int was_on = R->on_at_fork && !t->fork_nested;
	hs_live->on = 0; /* wiped already, unless madvise failed */
	drop_parent_files();
	hs_started = 0;
	if (!was_on || !hs_settings.follow)
		goto out;
	R->gen++;
	memset(R->counts, 0, sizeof(R->counts));
	events_modules_reset();
	events_maps_reset();
	R->events_since_tick = 0;
	if (stacks_reset()) {
		hs_fail("cannot allocate the stack table", ENOMEM);
		goto out;
	}
	start_clock();
	start_trace(HS_OPT_FORKED, 0);
out:
	pthread_setcancelstate(cancel, NULL);
	busy_leave(t);
}
