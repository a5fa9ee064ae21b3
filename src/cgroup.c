/* cgroup.c: cgroup mounts, resolving what the user named, members,
 * cgroup.kill and memory counters.
 *
 * The cgroup2 mount is found in mountinfo, never assumed: on hybrid systems
 * it sits beside the v1 controllers (for instance at /sys/fs/cgroup/unified).
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

/* mountinfo escapes blanks and backslashes in paths as \ooo. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static int add_mount(struct mr_cgmounts *ms, const char *path, const char *root, bool v2,
		     const char *opts)
{
	struct mr_cgmount *m = reallocarray(ms->m, ms->n + 1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	ms->m = m;
	m = &ms->m[ms->n];
	m->path = strdup(path);
	m->root = strdup(root);
	m->options = strdup(opts);
	m->v2 = v2;
	if (!m->path || !m->root || !m->options) {
		free(m->path);
		free(m->root);
		free(m->options);
		return -ENOMEM;
	}
	ms->n++;
	return 0;
}

/* Parse one mountinfo line: "id parent dev root mountpoint opts [tags] - type
 * source superopts". Only cgroup and cgroup2 mounts are kept. */
static int parse_mount_line(struct mr_cgmounts *ms, char *line)
{
	char *field[64], *save = NULL, *tok;
	int n = 0, sep = -1;

	for (tok = strtok_r(line, " \n", &save); tok && n < 64; tok = strtok_r(NULL, " \n", &save)) {
		if (sep < 0 && n >= 6 && strcmp(tok, "-") == 0)
			sep = n;
		field[n++] = tok;
	}
	if (sep < 0 || sep + 3 >= n)
		return 0;
	if (strcmp(field[sep + 1], "cgroup2") != 0 && strcmp(field[sep + 1], "cgroup") != 0)
		return 0;
	unescape(field[3]);
	unescape(field[4]);
	return add_mount(ms, field[4], field[3], strcmp(field[sep + 1], "cgroup2") == 0,
			 field[sep + 3]);
}

int mr_cgmounts_parse(struct mr_cgmounts *ms, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	int r = 0;

	*ms = (struct mr_cgmounts){ 0 };
	while (!r && getline(&line, &cap, f) > 0)
		r = parse_mount_line(ms, line);
	if (!r && ferror(f))
		r = -EIO;
	free(line);
	if (r)
		mr_cgmounts_free(ms);
	return r;
}

int mr_cgmounts_read(struct mr_cgmounts *ms, const char *mountinfo)
{
	FILE *f = fopen(mountinfo, "re");
	int r;

	if (!f)
		return -errno;
	r = mr_cgmounts_parse(ms, f);
	fclose(f);
	return r;
}

void mr_cgmounts_free(struct mr_cgmounts *ms)
{
	for (size_t i = 0; i < ms->n; i++) {
		free(ms->m[i].path);
		free(ms->m[i].root);
		free(ms->m[i].options);
	}
	free(ms->m);
	*ms = (struct mr_cgmounts){ 0 };
}

const struct mr_cgmount *mr_cgmounts_v2(const struct mr_cgmounts *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		if (ms->m[i].v2)
			return &ms->m[i];
	return NULL;
}

/* Whether a mount's super options name this controller. */
static bool has_controller(const char *options, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = options; (p = strstr(p, name)); p += len)
		if ((p == options || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
			return true;
	return false;
}

/* The v1 hierarchy that carries this controller, if one is mounted. */
const struct mr_cgmount *mr_cgmounts_v1(const struct mr_cgmounts *ms, const char *controller)
{
	for (size_t i = 0; i < ms->n; i++)
		if (!ms->m[i].v2 && has_controller(ms->m[i].options, controller))
			return &ms->m[i];
	return NULL;
}

/* The mount that holds path: the longest mount point that is a prefix of it
 * at a component boundary. */
static const struct mr_cgmount *mount_of(const struct mr_cgmounts *ms, const char *path)
{
	const struct mr_cgmount *best = NULL;

	for (size_t i = 0; i < ms->n; i++) {
		size_t len = strlen(ms->m[i].path);

		if (strncmp(path, ms->m[i].path, len) == 0 &&
		    (path[len] == '/' || path[len] == '\0' || len == 1) &&
		    (!best || len > strlen(best->path)))
			best = &ms->m[i];
	}
	return best;
}

static bool is_file(const char *dir, const char *name)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path) &&
	       access(path, F_OK) == 0;
}

/* Where this cgroup's memory is accounted: its own memory.current on v2 or
 * memory.usage_in_bytes in the v1 memory hierarchy, else the same relative
 * path in the v1 memory hierarchy, as on hybrid systems. */
static char *memory_file(const struct mr_cgmounts *ms, const struct mr_cgmount *m,
			 const char *path)
{
	const char *rel = path + strlen(m->path);
	char dir[PATH_MAX], *file = NULL;

	if (m->v2 && is_file(path, "memory.current"))
		return asprintf(&file, "%s/memory.current", path) < 0 ? NULL : file;
	for (size_t i = 0; i < ms->n; i++) {
		if (ms->m[i].v2 || !has_controller(ms->m[i].options, "memory"))
			continue;
		if (snprintf(dir, sizeof(dir), "%s%s", ms->m[i].path, rel) >= (int)sizeof(dir) ||
		    !is_file(dir, "memory.usage_in_bytes"))
			return NULL;
		return asprintf(&file, "%s/memory.usage_in_bytes", dir) < 0 ? NULL : file;
	}
	return NULL;
}

/* Whether a path that does not exist was meant as one in a cgroup file
 * system: it, or its parent once links are followed, lies in one. */
static bool in_mount(const struct mr_cgmounts *ms, const char *path)
{
	char parent[PATH_MAX], real[PATH_MAX], *slash;

	if (mount_of(ms, path))
		return true;
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return false;
	*slash = '\0';
	return realpath(parent, real) && mount_of(ms, real);
}

/* The cgroup under mount m that /proc/PID/cgroup or systemd (ControlGroup=)
 * would name as rel, from the hierarchy's root: "", "." and "/" are the
 * mount's own top. */
static int under(const struct mr_cgmount *m, const char *rel, char *out, size_t len)
{
	size_t rootlen;

	if (!m)
		return -ENOENT;
	rootlen = strcmp(m->root, "/") != 0 ? strlen(m->root) : 0;
	/* A mount of part of the hierarchy (a container's) shows m->root. */
	if (rootlen && rel[0] == '/') {
		if (strncmp(rel, m->root, rootlen) != 0 || (rel[rootlen] && rel[rootlen] != '/'))
			return -ENOENT;
		rel += rootlen;
	}
	while (*rel == '/' || (rel[0] == '.' && (rel[1] == '/' || !rel[1])))
		rel++;
	if (snprintf(out, len, "%s%s%s", m->path, *rel ? "/" : "", rel) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* A line pasted from /proc/PID/cgroup: "0::/x.service" (cgroup2), or
 * "4:memory:/x" and "9:name=systemd:/x" (v1). Its path under the mount of
 * that hierarchy into out: 1; not such a line: 0; -ENOENT: that hierarchy
 * is not mounted here. */
static int pasted(const struct mr_cgmounts *ms, const char *arg, char *out, size_t len)
{
	const char *ctl = arg + strspn(arg, "0123456789"), *rel;
	const struct mr_cgmount *m = NULL;
	char list[256];
	size_t n;

	if (ctl == arg || *ctl != ':' || !(rel = strchr(++ctl, ':')) || rel[1] != '/' ||
	    memchr(ctl, '/', (size_t)(rel - ctl)) || (n = (size_t)(rel - ctl)) >= sizeof(list))
		return 0;
	memcpy(list, ctl, n);
	list[n] = '\0';
	for (size_t i = 0; i < ms->n && !m; i++) {
		char *copy = strdup(list), *tok, *save = NULL;
		bool all = !ms->m[i].v2 && n;

		if (!copy)
			return -ENOMEM;
		for (tok = strtok_r(copy, ",", &save); tok && all; tok = strtok_r(NULL, ",", &save))
			all = has_controller(ms->m[i].options, tok);
		free(copy);
		if (n ? all : ms->m[i].v2)
			m = &ms->m[i];
	}
	if (!m)
		return -ENOENT;
	return under(m, rel + 1, out, len) ?: 1;
}

/* path, if it is a cgroup directory in a cgroup mount: its real path into
 * real, and its mount; or -errno: -EXDEV outside the cgroup mounts,
 * -ENOTDIR not a directory, -EMEDIUMTYPE a directory that is no cgroup. */
static int cgroup_dir(const struct mr_cgmounts *ms, const char *path, char *real,
		      const struct mr_cgmount **m)
{
	struct stat st;

	if (!realpath(path, real))
		return -errno;
	if (!(*m = mount_of(ms, real)))
		return -EXDEV;
	if (stat(real, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return is_file(real, "cgroup.procs") ? 0 : -EMEDIUMTYPE;
}

/* Fill cg for the cgroup directory at real, in mount m. */
static int take(const struct mr_cgmounts *ms, const struct mr_cgmount *m, const char *real,
		struct mr_cgroup *cg)
{
	const char *root, *tail;

	if (!m)
		return -EXDEV;
	root = strcmp(m->root, "/") != 0 ? m->root : "";
	tail = real + strlen(m->path);
	cg->v2 = m->v2;
	cg->root = strcmp(real, m->path) == 0;
	cg->path = strdup(real);
	cg->controllers = strdup(m->options);
	/* /proc/PID/cgroup names cgroups from the hierarchy's root, of which
	 * the mount shows m->root. */
	if (asprintf(&cg->rel, "%s%s", root, *root || *tail ? tail : "/") < 0)
		cg->rel = NULL;
	if (!cg->path || !cg->controllers || !cg->rel) {
		mr_cgroup_free(cg);
		return -ENOMEM;
	}
	cg->memory_file = memory_file(ms, m, real);
	return 0;
}

/* For an absolute path outside every cgroup mount, such as
 * /sys/fs/cgroup/x on a hybrid system: the same path under the mount
 * beside it that has such a cgroup (the cgroup2 mount first), or "". */
static void suggest(const struct mr_cgmounts *ms, const char *arg, char *out, size_t len)
{
	const struct mr_cgmount *v2 = mr_cgmounts_v2(ms), *m;
	char cand[PATH_MAX], real[PATH_MAX];

	*out = '\0';
	for (size_t i = 0; i <= ms->n && !*out; i++) {
		const char *slash;
		size_t base;

		m = i == 0 ? v2 : &ms->m[i - 1];
		if (!m || (i && m == v2) || !(slash = strrchr(m->path, '/')) || slash == m->path)
			continue;
		base = (size_t)(slash - m->path);
		if (strncmp(arg, m->path, base) != 0 || arg[base] != '/' ||
		    snprintf(cand, sizeof(cand), "%s%s", m->path, arg + base) >= (int)sizeof(cand))
			continue;
		if (cgroup_dir(ms, cand, real, &m) == 0)
			snprintf(out, len, "%s", real);
	}
}

/* Resolve what the user named:
 * - a line pasted from /proc/PID/cgroup: under the mount of its hierarchy;
 * - "./x", "../x", "." and "..": from the working directory, as everywhere;
 * - an absolute path in a cgroup mount: as it is, links followed;
 * - any other absolute path: under the cgroup2 mount, as /proc/PID/cgroup
 *   and systemd write them ("/system.slice/x.service"; "/" is its root);
 * - a bare relative "x": under the cgroup2 mount, or from the working
 *   directory when that is in a cgroup mount; both, when they name two
 *   different cgroups, is -ENOTUNIQ, with the two in tried and other.
 * "" is the cgroup2 root. On success cg->root tells the top of a cgroup
 * mount, which the caller refuses. Errors: -ENOENT no such cgroup (tried:
 * the path looked up last; other: a likely one, or ""), -EXDEV not in a
 * cgroup file system, -ENOTDIR, -EMEDIUMTYPE a directory that is no
 * cgroup, -ENOTUNIQ. */
int mr_cgroup_resolve(const struct mr_cgmounts *ms, const char *arg, struct mr_cgroup *cg,
		      char *tried, size_t triedlen, char *other, size_t otherlen)
{
	const struct mr_cgmount *m = NULL, *here = mr_cgmounts_v2(ms);
	char path[PATH_MAX], real[PATH_MAX] = "", cwd[PATH_MAX];
	bool dotted = arg[0] == '.' && (arg[1] == '/' || !arg[1] ||
					(arg[1] == '.' && (arg[2] == '/' || !arg[2])));
	int r, rcwd;

	*cg = (struct mr_cgroup){ .memory_before_kb = MR_UNKNOWN, .memory_after_kb = MR_UNKNOWN };
	snprintf(tried, triedlen, "%s", arg);
	*other = '\0';
	if ((r = pasted(ms, arg, path, sizeof(path))) < 0)
		return r;
	if (r == 1)
		arg = path;
	/* In a cgroup mount (or meant to be), or from the working directory:
	 * as it is. */
	r = cgroup_dir(ms, arg, real, &m);
	if (dotted || arg == path || (arg[0] == '/' && r != -EXDEV && (r != -ENOENT || in_mount(ms, arg)))) {
		if (r == -ENOENT && dotted && getcwd(cwd, sizeof(cwd)))
			snprintf(tried, triedlen, "%s/%s", cwd, arg);
		else
			snprintf(tried, triedlen, "%s", r == -ENOENT ? arg : real);
		return r ? r : take(ms, m, real, cg);
	}
	rcwd = r;
	/* Under the cgroup2 mount, as /proc/PID/cgroup and systemd name it. */
	if (under(here, arg, path, sizeof(path)) != 0)
		return -ENOENT;
	if ((r = cgroup_dir(ms, path, real, &m)) == 0) {
		snprintf(tried, triedlen, "%s", real);
		/* A bare name may also mean one below the working directory. */
		if (arg[0] != '/' && rcwd == 0 && realpath(arg, path) && strcmp(path, real) != 0) {
			snprintf(tried, triedlen, "%s", path);
			snprintf(other, otherlen, "%s", real);
			return -ENOTUNIQ;
		}
		return take(ms, m, real, cg);
	}
	if (arg[0] != '/' && rcwd == 0 && realpath(arg, real) && (m = mount_of(ms, real))) {
		snprintf(tried, triedlen, "%s", real);
		return take(ms, m, real, cg);
	}
	snprintf(tried, triedlen, "%s", path);
	if (arg[0] == '/' && access(arg, F_OK) == 0) {
		snprintf(tried, triedlen, "%s", arg);
		return -EXDEV;
	}
	if (arg[0] == '/')
		suggest(ms, arg, other, otherlen);
	return r == -EXDEV ? -ENOENT : r;
}

void mr_cgroup_free(struct mr_cgroup *cg)
{
	free(cg->path);
	free(cg->rel);
	free(cg->controllers);
	free(cg->memory_file);
	cg->path = cg->rel = cg->controllers = cg->memory_file = NULL;
}

static bool same_hierarchy(const struct mr_cgroup *cg, const char *id, const char *list)
{
	char *copy, *tok, *save = NULL;
	bool match = false;

	if (cg->v2)
		return strcmp(id, "0") == 0 && !*list;
	if (!*list || !(copy = strdup(list)))
		return false;
	for (tok = strtok_r(copy, ",", &save); tok && !match; tok = strtok_r(NULL, ",", &save))
		match = has_controller(cg->controllers, tok);
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

/* Whether the process is in cg (or below it, with recursive): a member's
 * pid may have been reused between listing and opening. 1 yes, 0 no, or
 * -errno when /proc says nothing. The caller checks afterwards that the
 * pidfd's process is still there, which makes the answer its own. */
int mr_cgroup_holds(const char *proc, const struct mr_cgroup *cg, pid_t pid, bool recursive)
{
	char path[PATH_MAX], *buf, *line, *save = NULL;
	ssize_t n;
	int r = 0;

	snprintf(path, sizeof(path), "%s/%d/cgroup", proc, (int)pid);
	/* Read whole: deep paths in many hierarchies pass any fixed size. */
	if ((n = mr_read_file_all(path, &buf)) < 0)
		return (int)n;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *id = line, *list, *rel;

		if (!(list = strchr(id, ':')) || !(rel = strchr(list + 1, ':')))
			continue;
		*list++ = '\0';
		*rel++ = '\0';
		/* Its place in this hierarchy decides, one way or the other. */
		if (same_hierarchy(cg, id, list)) {
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

/* A level for the directory the walk is in. */
static int push(struct walk *w)
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
	return subdirs(w->fd, &l->names, &l->n);
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
 * depth first, whatever its name (".hidden" too), with visit(dirfd, path).
 * Only one directory is held open at a time, however deep the tree: the
 * walk goes down with openat(name) and back up with openat(".."), so that
 * a tree made deep on purpose cannot run it out of descriptors. A cgroup
 * that vanishes meanwhile is skipped. */
static int walk(const char *top, bool recursive,
		int (*visit)(int dirfd, const char *path, void *arg), void *arg)
{
	struct walk w = { .fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC), .path = strdup(top) };
	int r;

	w.pathcap = strlen(top) + 1;
	if (w.fd < 0 || !w.path)
		r = w.fd < 0 ? -errno : -ENOMEM;
	else if (!(r = visit(w.fd, w.path, arg)) && recursive)
		r = push(&w);
	while (!r && w.depth) {
		struct level *l = &w.stack[w.depth - 1];

		if (l->next == l->n)
			r = pop(&w);
		else if ((r = down(&w, l->names[l->next++])) == -ENOENT)
			r = 0;
		else if (!r && !(r = visit(w.fd, w.path, arg)))
			r = push(&w);
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
	struct mr_pidlist *out;
	size_t *outside;
};

/* A threaded cgroup's cgroup.procs cannot be read (EOPNOTSUPP): its
 * processes are listed at its threaded domain, above it. */
static int list_one(int dirfd, const char *path, void *arg)
{
	struct listing *l = arg;
	int r = read_procs(dirfd, l->out, l->outside);

	(void)path;
	return r == -ENOENT || r == -ENODEV || r == -EOPNOTSUPP ? 0 : r;
}

int mr_cgroup_members(const struct mr_cgroup *cg, bool recursive, struct mr_pidlist *out,
		      size_t *outside)
{
	struct listing l = { out, outside };

	*outside = 0;
	return walk(cg->path, recursive, list_one, &l);
}

struct units {
	const char *name;
	char **paths;
	size_t n;
};

static int match_unit(int dirfd, const char *path, void *arg)
{
	struct units *u = arg;
	const char *base = strrchr(path, '/');
	char **v;

	(void)dirfd;
	if (!base || strcmp(base + 1, u->name) != 0)
		return 0;
	if (!(v = reallocarray(u->paths, u->n + 1, sizeof(*v))))
		return -ENOMEM;
	u->paths = v;
	if (!(v[u->n] = strdup(path)))
		return -ENOMEM;
	u->n++;
	return 0;
}

static int by_path(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The cgroups under the cgroup2 mount whose directory is called name, as
 * systemd names a unit's ("foo.service", "bar.scope", "baz.slice"), sorted
 * (the walk goes in the file system's order); the caller frees each and the
 * list. -ENOENT: no cgroup2 mount. */
int mr_cgroup_units(const struct mr_cgmounts *ms, const char *name, char ***paths, size_t *n)
{
	const struct mr_cgmount *v2 = mr_cgmounts_v2(ms);
	struct units u = { .name = name };
	int r;

	*paths = NULL;
	*n = 0;
	if (!v2)
		return -ENOENT;
	if ((r = walk(v2->path, true, match_unit, &u))) {
		for (size_t i = 0; i < u.n; i++)
			free(u.paths[i]);
		free(u.paths);
		return r;
	}
	if (u.n)
		qsort(u.paths, u.n, sizeof(*u.paths), by_path);
	*paths = u.paths;
	*n = u.n;
	return 0;
}

/* SIGKILL every process in a v2 cgroup and its descendants at once: the
 * kernel also kills what forks or moves in while this runs. *done_us: when
 * the write returned, for the kill is done then. */
int mr_cgroup_kill(const struct mr_cgroup *cg, int64_t *done_us)
{
	return mr_write_file(cg->path, "cgroup.kill", "1", done_us);
}

/* Whether cg has a cgroup.kill: v2, Linux 5.14 and later, not a root. */
bool mr_cgroup_can_kill(const struct mr_cgroup *cg)
{
	return cg->v2 && is_file(cg->path, "cgroup.kill");
}

int mr_cgroup_memory_kb(const struct mr_cgroup *cg, int64_t *kb)
{
	char buf[64], *end;
	unsigned long long bytes;
	int r;

	*kb = MR_UNKNOWN;
	if (!cg->memory_file)
		return -ENOENT;
	if ((r = (int)mr_read_file(cg->memory_file, buf, sizeof(buf))) < 0)
		return r;
	errno = 0;
	bytes = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*kb = (int64_t)(bytes / 1024);
	return 0;
}
