/* file.c: whole-file reads and writes of the small files in /proc and the
 * cgroup file systems, and JSON strings. The benchmark and the fuzz targets
 * link these too, so that there is one way of doing each. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrelease.h"

/* Read the whole file, up to len - 1 bytes, and end it with a NUL. Proc and
 * cgroup files are seq_files: a read fills the buffer until the text ends,
 * so a short read is the end, and saves the read that would return 0 (one
 * syscall in four, for each file of each target). Returns the length, or
 * -errno. */
ssize_t mr_read_fileat(int dirfd, const char *name, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n = 0;
	int fd, e;

	if (len == 0)
		return -EINVAL;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0) {
		got += (size_t)n;
		if ((size_t)n < len - 1 - (got - (size_t)n))
			break;
	}
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[got] = '\0';
	return (ssize_t)got;
}

ssize_t mr_read_file(const char *path, char *buf, size_t len)
{
	return mr_read_fileat(AT_FDCWD, path, buf, len);
}

/* Read a whole file, however long (/proc/PID/cgroup grows with the depth of
 * each hierarchy's path), into a buffer made for it, ended with a NUL.
 * Returns the length, or -errno; *buf is the caller's to free. */
ssize_t mr_read_file_all(const char *path, char **buf)
{
	size_t len = 4096, got = 0;
	char *b, *more;
	ssize_t n;
	int fd, e;

	*buf = NULL;
	if ((fd = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (!(b = malloc(len))) {
		close(fd);
		return -ENOMEM;
	}
	while ((n = read(fd, b + got, len - 1 - got)) > 0) {
		got += (size_t)n;
		if (got + 1 < len)
			continue;
		if (!(more = realloc(b, len *= 2))) {
			n = -1;
			errno = ENOMEM;
			break;
		}
		b = more;
	}
	e = errno;
	close(fd);
	if (n < 0) {
		free(b);
		return -e;
	}
	b[got] = '\0';
	*buf = b;
	return (ssize_t)got;
}

/* Write text to dir/name in one write, as cgroup control files want it.
 * done_us (or NULL): when the write returned, before the close, which can
 * wait behind what the write set off. */
int mr_write_file(const char *dir, const char *name, const char *text, int64_t *done_us)
{
	char path[PATH_MAX];
	ssize_t len = (ssize_t)strlen(text);
	int fd, r = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len)
		r = errno ? -errno : -EIO;
	if (done_us)
		*done_us = mr_now_us();
	if (close(fd) && !r)
		r = -errno;
	return r;
}

/* Length of the valid UTF-8 sequence at p, or 0: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
size_t mr_utf8_len(const unsigned char *p)
{
	size_t len;
	unsigned int cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* A C1 control (U+0080 to U+009F), as UTF-8 writes it. */
static bool c1(const unsigned char *p)
{
	return p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
}

/* A JSON string. Valid UTF-8 passes as it is, but for the control
 * characters (C0, DEL and C1), written as \u00XX. A process or cgroup name
 * need not be UTF-8: a byte that is not part of a valid sequence is written
 * as \udcXX, a lone surrogate as Python's surrogateescape makes it, so that
 * it is never taken for the character U+00XX. */
void mr_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t len = mr_utf8_len(p);

		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (len == 0)
			fprintf(out, "\\udc%02x", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else if (c1(p))
			fprintf(out, "\\u%04x", p[1]);
		else
			fwrite(p, 1, len, out);
		p += len ? len : 1;
	}
	fputc('"', out);
}

/* s made safe for a terminal, in buf: a byte of a control character (C0,
 * DEL, C1) or of an invalid UTF-8 sequence is written as \xHH, and a
 * backslash as \\, so that no name can move the cursor, set the title or
 * pass for another. Cut short, not split, where buf ends. */
const char *mr_text_escape(const char *s, char *buf, size_t len)
{
	size_t w = 0;

	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
		size_t n = mr_utf8_len(p);
		bool raw = n && *p >= 0x20 && *p != 0x7f && *p != '\\' && !c1(p);
		size_t need = raw ? n : (n ? n : 1) * 4 - (*p == '\\' ? 2 : 0);

		if (w + need >= len)
			break;
		if (raw) {
			memcpy(buf + w, p, n);
		} else if (*p == '\\') {
			memcpy(buf + w, "\\\\", 2);
		} else {
			for (size_t i = 0; i < (n ? n : 1); i++)
				snprintf(buf + w + 4 * i, 5, "\\x%02x", p[i]);
		}
		w += need;
		p += n ? n : 1;
	}
	if (len)
		buf[w] = '\0';
	return buf;
}

/* mountinfo escapes blanks and backslashes in paths as \ooo: undone in
 * place. */
void mr_unescape_octal(char *s)
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

/* Whether dir/name exists. */
bool mr_file_in(const char *dir, const char *name)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path) &&
	       access(path, F_OK) == 0;
}
