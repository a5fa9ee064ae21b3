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

static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

static bool is_file(const char *dir, const char *name)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path) &&
	       access(path, R_OK) == 0;
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

/* The cgroup under the cgroup2 mount that /proc/PID/cgroup and systemd
 * (ControlGroup=) would name as arg: "", "." and "/" are its root. */
static int under_v2(const struct mr_cgmount *v2, const char *arg, char *out, size_t len)
{
	if (!v2)
		return -ENOENT;
	while (*arg == '/')
		arg++;
	if (snprintf(out, len, "%s%s%s", v2->path, *arg ? "/" : "", arg) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* Resolve what the user named. A path that leads into a cgroup mount is
 * taken as it is, symbolic links followed (/sys/fs/cgroup/cpu is often a
 * link to cpu,cpuacct); if it leads into one but does not exist, there is
 * no such cgroup. Anything else, relative or absolute, names a cgroup
 * of the v2 hierarchy from its root, as /proc/PID/cgroup and systemd write
 * them: "batch", "/system.slice/x.service", and "", "." or "/" for the root.
 * ".." is refused outright. In tried goes the path that was looked up last.
 * On success cg->root tells that it is the top of a cgroup mount, which the
 * caller refuses without --force.
 * -ENOENT: no such cgroup (or no v2 mount to look under); -ENOTDIR: not a
 * directory; -EXDEV: leads out of the cgroup mounts; -EINVAL: "..";
 * -EMEDIUMTYPE: a directory that is not a cgroup. */
int mr_cgroup_resolve(const struct mr_cgmounts *ms, const char *arg, struct mr_cgroup *cg,
		      char *tried, size_t triedlen)
{
	const struct mr_cgmount *m = NULL;
	char joined[PATH_MAX], real[PATH_MAX];
	const char *root, *tail;
	struct stat st;
	int r;

	*cg = (struct mr_cgroup){ .memory_before_kb = MR_UNKNOWN, .memory_after_kb = MR_UNKNOWN };
	snprintf(tried, triedlen, "%s", arg);
	if (has_dotdot(arg))
		return -EINVAL;
	if (arg[0] == '/' && !realpath(arg, real)) {
		int e = errno;

		if (e != ENOENT)
			return -e;
		if (in_mount(ms, arg))
			return -ENOENT;
		real[0] = '\0';
	}
	if (arg[0] == '/' && real[0] && (m = mount_of(ms, real))) {
		/* A path in a cgroup file system, as it is. */
	} else {
		if ((r = under_v2(mr_cgmounts_v2(ms), arg, joined, sizeof(joined))))
			return r;
		snprintf(tried, triedlen, "%s", joined);
		if (!realpath(joined, real))
			return -errno;
		m = mount_of(ms, real);
		if (!m)
			return -EXDEV;
	}
	snprintf(tried, triedlen, "%s", real);
	if (stat(real, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (!is_file(real, "cgroup.procs"))
		return -EMEDIUMTYPE;
	cg->v2 = m->v2;
	cg->root = strcmp(real, m->path) == 0;
	cg->path = strdup(real);
	cg->controllers = strdup(m->options);
	/* /proc/PID/cgroup names cgroups from the hierarchy's root, of which
	 * the mount shows m->root. */
	root = strcmp(m->root, "/") ? m->root : "";
	tail = real + strlen(m->path);
	if (asprintf(&cg->rel, "%s%s", root, *root || *tail ? tail : "/") < 0)
		cg->rel = NULL;
	if (!cg->path || !cg->controllers || !cg->rel) {
		mr_cgroup_free(cg);
		return -ENOMEM;
	}
	cg->memory_file = memory_file(ms, m, real);
	return 0;
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
	char path[PATH_MAX], buf[8192], *line, *save = NULL;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/cgroup", proc, (int)pid);
	if ((n = mr_read_file(path, buf, sizeof(buf))) < 0)
		return (int)n;
	/* Cut short, its line for our hierarchy may be missing. */
	if ((size_t)n == sizeof(buf) - 1)
		return -EFBIG;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *id = line, *list, *rel;

		if (!(list = strchr(id, ':')) || !(rel = strchr(list + 1, ':')))
			continue;
		*list++ = '\0';
		*rel++ = '\0';
		/* Its place in this hierarchy decides, one way or the other. */
		if (same_hierarchy(cg, id, list))
			return below(rel, cg->rel, recursive);
	}
	return 0;
}

static int read_procs(int dirfd, struct mr_pidlist *out, size_t *outside)
{
	struct mr_pidspec spec = { 0 };
	char line[32];
	FILE *f;
	int fd, r = 0;

	fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return -errno;
	}
	while (!r && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		/* A member outside our pid namespace has no pid here; it is
		 * counted, for cgroup.kill kills it too. */
		if (strcmp(line, "0") == 0) {
			(*outside)++;
			continue;
		}
		r = mr_parse_pid(line, &spec.pid);
		if (!r)
			r = mr_pidlist_add(out, spec);
	}
	if (!r && ferror(f))
		r = -EIO;
	fclose(f);
	return r;
}

/* A cgroup that vanishes while we walk it has no members. Every child
 * directory is a cgroup, whatever its name: ".hidden" too. */
static int walk(int dirfd, bool recursive, struct mr_pidlist *out, size_t *outside)
{
	struct dirent *d;
	DIR *dir;
	int fd, r;

	r = read_procs(dirfd, out, outside);
	if (r == -ENOENT || r == -ENODEV)
		return 0;
	if (r || !recursive)
		return r;
	if ((fd = dup(dirfd)) < 0)
		return -errno;
	if (!(dir = fdopendir(fd))) {
		r = -errno;
		close(fd);
		return r;
	}
	while (!r && (d = readdir(dir))) {
		int sub;

		if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0 ||
		    strcmp(d->d_name, "..") == 0)
			continue;
		sub = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0) {
			if (errno != ENOENT)
				r = -errno;
			continue;
		}
		r = walk(sub, true, out, outside);
		close(sub);
	}
	closedir(dir);
	return r;
}

int mr_cgroup_members(const struct mr_cgroup *cg, bool recursive, struct mr_pidlist *out,
		      size_t *outside)
{
	int fd, r;

	*outside = 0;
	fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = walk(fd, recursive, out, outside);
	close(fd);
	return r;
}

/* SIGKILL every process in a v2 cgroup and its descendants at once; the
 * kernel also kills what forks while this runs. -ENOENT: no cgroup.kill
 * (before Linux 5.14, or the root cgroup). */
int mr_cgroup_kill(const struct mr_cgroup *cg)
{
	if (!cg->v2)
		return -ENOENT;
	return mr_write_file(cg->path, "cgroup.kill", "1");
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
