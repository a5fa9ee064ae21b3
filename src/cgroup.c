/* cgroup.c: a cgroup's members (a walk of its tree), whether a process is
 * in it, and cgroup.kill.
 *
 * mrelease never freezes a cgroup: cgroup.kill already kills what forks
 * while it runs, and a freeze is one more thing a killed run could leave
 * behind.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrelease.h"

static bool same_hierarchy(const struct mr_cgroup *cg, const char *id, const char *list)
{
	char *copy, *tok, *save = NULL;
	bool match = false;

	if (cg->v2)
		return strcmp(id, "0") == 0 && !*list;
	if (!*list || !(copy = strdup(list)))
		return false;
	for (tok = strtok_r(copy, ",", &save); tok && !match; tok = strtok_r(NULL, ",", &save))
		match = mr_has_controller(cg->controllers, tok);
	free(copy);
	return match;
}

/* Whether cgroup rel is top, or with recursive, one of its descendants. */
static bool below(const char *rel, const char *top, bool recursive)
{
	size_t len = strlen(top);

	if (strcmp(rel, top) == 0)
		return true;
	if (!recursive)
		return false;
	return strcmp(top, "/") == 0 || (strncmp(rel, top, len) == 0 && rel[len] == '/');
}

static int by_id(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* Whether the process is in cg (or below it, with recursive): a member's
 * pid may have been reused between listing and opening. 1 yes, 0 no, or
 * -errno when nothing says. On cgroup v2 the pidfd's process itself tells
 * its cgroup (PIDFD_GET_INFO), which is looked for among those the last
 * listing of cg visited; elsewhere /proc/PID/cgroup tells, and the caller
 * checks afterwards that the pidfd's process is still there, which makes
 * the answer its own. */
int mr_cgroup_holds(const char *proc, const struct mr_cgroup *cg, pid_t pid, int pidfd,
		    bool recursive)
{
	char path[PATH_MAX], *buf, *line, *save = NULL;
	uint64_t id;
	pid_t ppid;
	ssize_t n;
	int r = 0;

	if (cg->v2 && cg->nids && pidfd >= 0 && mr_pidfd_info(pidfd, &ppid, &id) == 0 && id)
		return recursive ? bsearch(&id, cg->ids, cg->nids, sizeof(id), by_id) != NULL :
				   id == cg->id;
	snprintf(path, sizeof(path), "%s/%d/cgroup", proc, (int)pid);
	/* Read whole: deep paths in many hierarchies pass any fixed size. */
	if ((n = mr_read_file_all(path, &buf)) < 0)
		return (int)n;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hid = line, *list, *rel;

		if (!(list = strchr(hid, ':')) || !(rel = strchr(list + 1, ':')))
			continue;
		*list++ = '\0';
		*rel++ = '\0';
		/* Its place in this hierarchy decides, one way or the other. */
		if (same_hierarchy(cg, hid, list)) {
			r = below(rel, cg->rel, recursive);
			break;
		}
	}
	free(buf);
	return r;
}

/* Add the pids in the cgroup.procs of the directory at dirfd to out. A
 * member outside our pid namespace is listed as 0: counted in *outside. */
static int read_procs(int dirfd, struct mr_pidlist *out, size_t *outside)
{
	struct mr_pidspec spec = { 0 };
	char line[32];
	FILE *f;
	int fd, r = 0;

	if ((fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (!(f = fdopen(fd, "re"))) {
		r = -errno;
		close(fd);
		return r;
	}
	while (!r && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "0") == 0) {
			(*outside)++;
			continue;
		}
		if (!(r = mr_parse_pid(line, &spec.pid)))
			r = mr_pidlist_add(out, spec);
	}
	if (!r && ferror(f))
		r = errno ? -errno : -EIO;
	fclose(f);
	return r;
}

/* The subdirectories of the directory at fd, by name. */
static int subdirs(int fd, char ***names, size_t *n)
{
	struct dirent *d;
	DIR *dir;
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0), r = 0;

	*names = NULL;
	*n = 0;
	if (dup_fd < 0)
		return -errno;
	if (!(dir = fdopendir(dup_fd))) {
		r = -errno;
		close(dup_fd);
		return r;
	}
	while (!r && (errno = 0, d = readdir(dir))) {
		char **v;

		if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (!(v = reallocarray(*names, *n + 1, sizeof(*v))) || !(v[*n] = strdup(d->d_name))) {
			*names = v ? v : *names;
			r = -ENOMEM;
			break;
		}
		*names = v;
		(*n)++;
	}
	if (!r && errno)
		r = -errno;
	closedir(dir);
	return r;
}

/* A walk: the directory it is in, its path, and for each level down to it
 * the names still to visit there. */
struct level {
	char **names;
	size_t n, next, pathlen;
};

struct walk {
	int fd;
	char *path;
	size_t pathcap;
	struct level *stack;
	size_t depth, cap;
};


/* A level for the directory the walk is in: its subdirectories to visit,
 * or with below false none, so that the walk goes back up. */
static int push(struct walk *w, bool below)
{
	struct level *l;

	if (w->depth == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;

		if (!(l = reallocarray(w->stack, cap, sizeof(*l))))
			return -ENOMEM;
		w->stack = l;
		w->cap = cap;
	}
	l = &w->stack[w->depth++];
	*l = (struct level){ .pathlen = strlen(w->path) };
	return below ? subdirs(w->fd, &l->names, &l->n) : 0;
}

/* Done with the deepest level: back up to its parent. */
static int pop(struct walk *w)
{
	struct level *l = &w->stack[--w->depth];
	int up;

	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	if (!w->depth)
		return 0;
	if ((up = openat(w->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	close(w->fd);
	w->fd = up;
	w->path[w->stack[w->depth - 1].pathlen] = '\0';
	return 0;
}

/* Down into name, a subdirectory of where the walk is. */
static int down(struct walk *w, const char *name)
{
	size_t len = strlen(w->path) + strlen(name) + 2;
	int sub = openat(w->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (sub < 0)
		return -errno;
	if (len > w->pathcap) {
		char *p = realloc(w->path, w->pathcap = 2 * len);

		if (!p) {
			close(sub);
			return -ENOMEM;
		}
		w->path = p;
	}
	snprintf(w->path + strlen(w->path), w->pathcap - strlen(w->path), "/%s", name);
	close(w->fd);
	w->fd = sub;
	return 0;
}

/* Visit the cgroup at top, then (with recursive) every cgroup below it,
 * depth first, whatever its name (".hidden" too), with visit(dirfd, path),
 * but those below one whose visit said MR_WALK_PRUNE.
 * Only one directory is held open at a time, however deep the tree: the
 * walk goes down with openat(name) and back up with openat(".."), so that
 * a tree made deep on purpose cannot run it out of descriptors. A cgroup
 * that vanishes meanwhile is skipped. */
int mr_cgroup_walk(const char *top, bool recursive,
		   int (*visit)(int dirfd, const char *path, void *arg), void *arg)
{
	struct walk w = { .fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC), .path = strdup(top) };
	int r;

	w.pathcap = strlen(top) + 1;
	if (w.fd < 0 || !w.path)
		r = w.fd < 0 ? -errno : -ENOMEM;
	else if ((r = visit(w.fd, w.path, arg)) == MR_WALK_PRUNE)
		r = 0;
	else if (!r && recursive)
		r = push(&w, true);
	while (!r && w.depth) {
		struct level *l = &w.stack[w.depth - 1];

		if (l->next == l->n)
			r = pop(&w);
		else if ((r = down(&w, l->names[l->next++])) == -ENOENT)
			r = 0;
		else if (!r && (r = visit(w.fd, w.path, arg)) >= 0)
			r = push(&w, r == MR_WALK_ON);
	}
	while (w.depth)
		pop(&w);
	if (w.fd >= 0)
		close(w.fd);
	free(w.stack);
	free(w.path);
	return r;
}

struct listing {
	struct mr_cgroup *cg;
	size_t cap; /* of cg->ids */
	struct mr_pidlist *out;
	size_t *outside;
};

/* A v2 cgroup's id is its directory's inode number (the kernfs node id,
 * which PIDFD_GET_INFO reports as cgroupid). */
static int add_id(struct listing *l, int dirfd)
{
	struct mr_cgroup *cg = l->cg;
	struct stat st;
	uint64_t *v;

	if (fstat(dirfd, &st))
		return -errno;
	if (cg->nids == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		if (!(v = reallocarray(cg->ids, l->cap, sizeof(*v))))
			return -ENOMEM;
		cg->ids = v;
	}
	cg->ids[cg->nids++] = (uint64_t)st.st_ino;
	return 0;
}

/* A threaded cgroup's cgroup.procs cannot be read (EOPNOTSUPP): its
 * processes are listed at its threaded domain, above it. */
static int list_one(int dirfd, const char *path, void *arg)
{
	struct listing *l = arg;
	int r = l->cg->v2 ? add_id(l, dirfd) : 0;

	(void)path;
	if (!r)
		r = read_procs(dirfd, l->out, l->outside);
	return r == -ENOENT || r == -ENODEV || r == -EOPNOTSUPP ? 0 : r;
}

/* The members of cg, and with recursive those of its descendants; on v2,
 * the ids of the cgroups visited are kept in cg (its own in cg->id), for
 * mr_cgroup_holds. */
int mr_cgroup_members(struct mr_cgroup *cg, bool recursive, struct mr_pidlist *out,
		      size_t *outside)
{
	struct listing l = { .cg = cg, .out = out, .outside = outside };
	int r;

	*outside = 0;
	cg->nids = 0;
	r = mr_cgroup_walk(cg->path, recursive, list_one, &l);
	if (!r && cg->nids) {
		cg->id = cg->ids[0];
		qsort(cg->ids, cg->nids, sizeof(*cg->ids), by_id);
	} else {
		cg->nids = 0;
	}
	return r;
}

/* SIGKILL every process in a v2 cgroup and its descendants at once: the
 * kernel also kills what forks or moves in while this runs. *done_us: when
 * the write returned, for the kill is done then. */
int mr_cgroup_kill(const struct mr_cgroup *cg, int64_t *done_us)
{
	return mr_write_file(cg->path, "cgroup.kill", "1", done_us);
}

/* Whether this caller may write cg's cgroup.kill, as the kernel checks it
 * at the write: 0, or -errno (-EACCES). */
int mr_cgroup_kill_permitted(const struct mr_cgroup *cg)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/cgroup.kill", cg->path) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) ? -errno : 0;
}

/* Whether cg has a cgroup.kill: v2, Linux 5.14 and later, not a root. */
bool mr_cgroup_can_kill(const struct mr_cgroup *cg)
{
	return cg->v2 && mr_file_in(cg->path, "cgroup.kill");
}
