/* cgpath.c: the cgroup mounts, and naming a cgroup: a path as given, a
 * line pasted from /proc/PID/cgroup, or a system manager's unit; and
 * whether what is named is the root of a hierarchy, which is refused.
 *
 * The cgroup2 mount is found in mountinfo, never assumed: on hybrid systems
 * it sits beside the v1 controllers (for instance at /sys/fs/cgroup/unified).
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
	mr_unescape_octal(field[3]);
	mr_unescape_octal(field[4]);
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
bool mr_has_controller(const char *options, const char *name)
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
		if (!ms->m[i].v2 && mr_has_controller(ms->m[i].options, controller))
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
			all = mr_has_controller(ms->m[i].options, tok);
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
	return mr_file_in(real, "cgroup.procs") ? 0 : -EMEDIUMTYPE;
}

/* A mount of part of a hierarchy (a bind mount of a subtree, m->root not
 * "/") shows cgroups that a mount of the whole hierarchy shows too: there,
 * under their real path, if this system has one. */
static const struct mr_cgmount *whole(const struct mr_cgmounts *ms, const struct mr_cgmount *m,
				      char *real, size_t len)
{
	char path[PATH_MAX], canon[PATH_MAX];

	for (size_t i = 0; strcmp(m->root, "/") != 0 && i < ms->n; i++) {
		const struct mr_cgmount *w = &ms->m[i];

		if (w->v2 != m->v2 || strcmp(w->options, m->options) != 0 || strcmp(w->root, "/") != 0 ||
		    snprintf(path, sizeof(path), "%s%s%s", strcmp(w->path, "/") ? w->path : "", m->root,
			     real + strlen(m->path)) >= (int)sizeof(path) ||
		    !realpath(path, canon) || mount_of(ms, canon) != w)
			continue;
		snprintf(real, len, "%s", canon);
		return w;
	}
	return m;
}

/* Fill cg for the cgroup directory at real (PATH_MAX long), in mount m. It
 * is the root of its hierarchy only where the mount shows the whole
 * hierarchy: a bind mount of a subtree has a cgroup at its top. */
static int take(const struct mr_cgmounts *ms, const struct mr_cgmount *m, char *real,
		struct mr_cgroup *cg)
{
	const char *root, *tail;

	if (!m)
		return -EXDEV;
	m = whole(ms, m, real, PATH_MAX);
	root = strcmp(m->root, "/") != 0 ? m->root : "";
	tail = real + strlen(m->path);
	cg->v2 = m->v2;
	cg->root = strcmp(real, m->path) == 0 && !*root;
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
	cg->memory_file = mr_cgroup_memory_file(real, m->v2);
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
	free(cg->ids);
	cg->path = cg->rel = cg->controllers = cg->memory_file = NULL;
	cg->ids = NULL;
	cg->nids = 0;
}

/* Ready cg for another run: what the last one found and did in it is
 * forgotten; what it is stays. */
void mr_cgroup_reset(struct mr_cgroup *cg)
{
	struct mr_cgroup keep = {
		.path = cg->path, .rel = cg->rel, .controllers = cg->controllers, .v2 = cg->v2,
		.root = cg->root, .memory_file = cg->memory_file,
		.memory_before_kb = MR_UNKNOWN, .memory_after_kb = MR_UNKNOWN,
	};

	free(cg->ids);
	*cg = keep;
}

struct units {
	const char *name;
	size_t toplen;
	char **paths;
	size_t n;
};

static bool is_slice(const char *name)
{
	size_t len = strlen(name);

	return len > 6 && strcmp(name + len - 6, ".slice") == 0;
}

/* Where systemd keeps the units it manages: in the root cgroup and in
 * slices, and slices only in slices. A cgroup of that name below a
 * service or a scope (a container's, a user manager's) is another
 * manager's, and is not looked into. */
static int match_unit(int dirfd, const char *path, void *arg)
{
	struct units *u = arg;
	const char *base = strrchr(path, '/');
	char **v;

	(void)dirfd;
	if (strlen(path) == u->toplen)
		return MR_WALK_ON;
	if (base && strcmp(base + 1, u->name) == 0) {
		if (!(v = reallocarray(u->paths, u->n + 1, sizeof(*v))))
			return -ENOMEM;
		u->paths = v;
		if (!(v[u->n] = strdup(path)))
			return -ENOMEM;
		u->n++;
	}
	return base && is_slice(base + 1) ? MR_WALK_ON : MR_WALK_PRUNE;
}

static int by_path(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The cgroups of the system manager's units called name ("foo.service",
 * "bar.scope", "baz.slice") under the cgroup2 mount: in its root and in
 * its slices, sorted (the walk goes in the file system's order); the
 * caller frees each and the list. -ENOENT: no cgroup2 mount. */
int mr_cgroup_units(const struct mr_cgmounts *ms, const char *name, char ***paths, size_t *n)
{
	const struct mr_cgmount *v2 = mr_cgmounts_v2(ms);
	struct units u = { .name = name };
	int r;

	*paths = NULL;
	*n = 0;
	if (!v2)
		return -ENOENT;
	u.toplen = strlen(v2->path);
	if ((r = mr_cgroup_walk(v2->path, true, match_unit, &u))) {
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
