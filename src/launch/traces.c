#include "traces.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "contract.h"
#include "format/reader.h"

int trace_create(char *path, size_t cap, int force, int numbered)
{
	struct stat st;
	char base[PATH_MAX];
	if (force && lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			return TRACE_NOT_REGULAR;
		if (unlink(path) && errno != ENOENT)
			return -1;
	}
	snprintf(base, sizeof(base), "%s", path);
	for (int i = 0; i < (numbered ? HS_TRACE_TRIES : 1); i++) {
		if (trace_name_try(base, i, path, cap))
			break;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
			      0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/* Nothing of the socket is inherited by the program (close-on-exec), and
 * a recorder that outlives `record` finds nobody listening: its connect
 * just fails. */
int reports_open(char *name, size_t cap)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r ^= (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	snprintf(name, cap, "heapslope.%d.%016llx", (int)getpid(),
		 (unsigned long long)r);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t l = strlen(name);
	memcpy(a.sun_path + 1, name, l);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l)) ||
	    listen(fd, 4096)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One recorder's report: it connects, writes a line and closes, so the
 * line is there by now; a connection that sends nothing is given up
 * after a moment.  Only processes of our own user are listened to. */
static void read_report(int c, struct paths *out)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char buf[PATH_MAX + 2];
	size_t len = 0;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ||
	    cred.uid != getuid())
		return;
	while (len < sizeof(buf)) {
		struct pollfd p = { c, POLLIN, 0 };
		if (poll(&p, 1, 100) <= 0)
			break;
		ssize_t n = read(c, buf + len, sizeof(buf) - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	char *nl = memchr(buf, '\n', len);
	if (nl && nl > buf)
		paths_add(out, buf, (size_t)(nl - buf));
}

void reports_drain(int fd, struct paths *out)
{
	int c;
	while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		read_report(c, out);
		close(c);
	}
}

/* Whether the trace has a heap event (read up to the first). */
static int has_events(struct hs_reader *r)
{
	struct hs_record rec;
	int rc;
	while ((rc = reader_next(r, &rec)) > 0)
		if (rec.kind >= HS_REC_ALLOC)
			return 1;
	return rc < 0; /* unreadable: not ours to remove */
}

int trace_check(const char *path, const char *prog, int warned)
{
	struct stat st;
	if (stat(path, &st) == 0 && st.st_size == 0) {
		unlink(path);
		if (!warned)
			fprintf(stderr, "heapslope record: nothing was recorded "
					"in %s: the recorder did not load in "
					"it, or could not write its trace\n",
				prog);
		return -1;
	}
	struct hs_reader *r = reader_open(path);
	const struct hs_header *h = r ? reader_header(r) : NULL;
	int empty = h && h->malloc_owner && !has_events(r);
	if (empty) {
		unlink(path);
		fprintf(stderr, "heapslope record: nothing was recorded in %s: "
				"its malloc is its own (%s), which the "
				"recorder does not see\n", prog, h->malloc_owner);
	}
	reader_destroy(r);
	return empty ? -1 : 0;
}
