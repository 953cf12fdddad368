/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/capture.h"
#include "basic/clock.h"
#include "basic/dirread.h"
#include "basic/dynlib.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/path.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "harness.h"

static void test_parse_duration_units(void)
{
	uint64_t ms;

	ASSERT_EQ_INT(parse_duration_ms("30s", &ms), 0);
	ASSERT_EQ_INT(ms, 30000);
	ASSERT_EQ_INT(parse_duration_ms("500ms", &ms), 0);
	ASSERT_EQ_INT(ms, 500);
	ASSERT_EQ_INT(parse_duration_ms("1.5s", &ms), 0);
	ASSERT_EQ_INT(ms, 1500);
	ASSERT_EQ_INT(parse_duration_ms("2m", &ms), 0);
	ASSERT_EQ_INT(ms, 120000);
	ASSERT_EQ_INT(parse_duration_ms("7", &ms), 0);
	ASSERT_EQ_INT(ms, 7000);
	ASSERT_EQ_INT(parse_duration_ms("2d", &ms), 0);
	ASSERT_EQ_INT(ms, 2 * 86400000LL);
}

static void test_parse_duration_rejects_garbage(void)
{
	uint64_t ms = 42;

	ASSERT_EQ_INT(parse_duration_ms("", &ms), -EINVAL);
	ASSERT_EQ_INT(parse_duration_ms("-1s", &ms), -EINVAL);
	ASSERT_EQ_INT(parse_duration_ms("5x", &ms), -EINVAL);
	ASSERT_EQ_INT(parse_duration_ms("1.s", &ms), -EINVAL);
	ASSERT_EQ_INT(parse_duration_ms("s", &ms), -EINVAL);
	ASSERT_EQ_INT(parse_duration_ms("99999999999999999999s", &ms), -ERANGE);
	ASSERT_EQ_INT(parse_duration_ms("9999999999999999h", &ms), -ERANGE);
	ASSERT_EQ_INT(ms, 42);
}

static void test_parse_int_bounds(void)
{
	int v;

	ASSERT_EQ_INT(parse_int("255", 0, 255, &v), 0);
	ASSERT_EQ_INT(v, 255);
	ASSERT_EQ_INT(parse_int("256", 0, 255, &v), -ERANGE);
	ASSERT_EQ_INT(parse_int("-1", 0, 255, &v), -ERANGE);
	ASSERT_EQ_INT(parse_int("-5", -10, 10, &v), 0);
	ASSERT_EQ_INT(v, -5);
	ASSERT_EQ_INT(parse_int("1 ", 0, 9, &v), -EINVAL);
	ASSERT_EQ_INT(parse_int("+1", 0, 9, &v), -EINVAL);
}

static void test_parse_size_units(void)
{
	uint64_t b;

	ASSERT_EQ_INT(parse_size("8K", &b), 0);
	ASSERT_EQ_INT(b, 8192);
	ASSERT_EQ_INT(parse_size("1GiB", &b), 0);
	ASSERT_EQ_INT(b, 1ULL << 30);
	ASSERT_EQ_INT(parse_size("12", &b), 0);
	ASSERT_EQ_INT(b, 12);
	ASSERT_EQ_INT(parse_size("1T", &b), -EINVAL);
}

static void test_error_prefix_nests_context(void)
{
	struct error err = { 0 };

	ASSERT_EQ_INT(error_set(&err, ENOENT, "open '%s'", "x"), -ENOENT);
	ASSERT_EQ_INT(error_prefix(&err, "policy"), -ENOENT);
	ASSERT_EQ_STR(err.msg, "policy: open 'x'");
	ASSERT_EQ_INT(error_set_errno(&err, EACCES, "read"), -EACCES);
	ASSERT_EQ_STR(err.msg, "read: Permission denied");
	ASSERT_EQ_INT(error_set(NULL, EINVAL, "ignored"), -EINVAL);
}

static void test_error_prefix_truncates_safely(void)
{
	struct error err = { 0 };
	char big[2000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	error_set(&err, EIO, "%s", big);
	error_prefix(&err, "%s", big);
	ASSERT_EQ_INT(strlen(err.msg), sizeof(err.msg) - 1);
}

static void test_sha256_known_vectors(void)
{
	char hex[SHA256_HEX_SIZE];

	sha256_hex("", 0, hex);
	ASSERT_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_hex("abc", 3, hex);
	ASSERT_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_capture_keeps_head_and_tail(void)
{
	struct capture c;
	char tail[8];

	ASSERT_EQ_INT(capture_init(&c, 8), 0);
	capture_feed(&c, "0123", 4);
	capture_feed(&c, "456789abcdef", 12);
	capture_finish(&c);
	ASSERT_EQ_INT(c.total_bytes, 16);
	ASSERT_EQ_INT(c.head_len, 4);
	ASSERT_TRUE(memcmp(c.head, "0123", 4) == 0);
	size_t n = capture_copy_tail(&c, tail);
	ASSERT_EQ_INT(n, 4);
	ASSERT_TRUE(memcmp(tail, "cdef", 4) == 0);
	ASSERT_TRUE(capture_is_truncated(&c));
	ASSERT_EQ_INT(capture_omitted_bytes(&c), 8);
	char want[SHA256_HEX_SIZE];
	sha256_hex("0123456789abcdef", 16, want);
	ASSERT_EQ_STR(c.sha256, want);
	capture_release(&c);
}

static void test_capture_tail_wraps_byte_by_byte(void)
{
	struct capture c;
	char tail[3];

	ASSERT_EQ_INT(capture_init(&c, 6), 0);
	for (char ch = 'a'; ch <= 'z'; ch++)
		capture_feed(&c, &ch, 1);
	capture_finish(&c);
	ASSERT_EQ_INT(capture_copy_tail(&c, tail), 3);
	ASSERT_TRUE(memcmp(tail, "xyz", 3) == 0);
	ASSERT_TRUE(memcmp(c.head, "abc", 3) == 0);
	capture_release(&c);
}

static void test_capture_short_stream_is_whole(void)
{
	struct capture c;
	char tail[4];

	ASSERT_EQ_INT(capture_init(&c, 8), 0);
	capture_feed(&c, "hello", 5);
	capture_finish(&c);
	ASSERT_TRUE(!capture_is_truncated(&c));
	ASSERT_EQ_INT(c.head_len, 4);
	ASSERT_EQ_INT(capture_copy_tail(&c, tail), 1);
	ASSERT_TRUE(tail[0] == 'o');
	capture_release(&c);
}

static void test_utf8_validation(void)
{
	ASSERT_TRUE(utf8_is_valid("h\xc3\xa9llo", 6));
	ASSERT_TRUE(!utf8_is_valid("\xff", 1));
	ASSERT_TRUE(!utf8_is_valid("\xc0\xaf", 2)); /* overlong '/' */
	ASSERT_TRUE(!utf8_is_valid("\xed\xa0\x80", 3)); /* surrogate */
	ASSERT_TRUE(!utf8_is_valid("\xe2\x82", 2)); /* cut short */
	size_t n;
	char *s = utf8_sanitize("a\xff"
				"b",
				3, &n);
	ASSERT_TRUE(s != NULL);
	ASSERT_EQ_STR(s, "a\xef\xbf\xbd"
			 "b");
	ASSERT_EQ_INT(n, 5);
	free(s);
}

/* text_for_terminal(data) is expect, and keeps no byte a terminal acts on. */
static bool terminal_case(const char *data, size_t n, const char *expect)
{
	size_t len;
	char *got = text_for_terminal(data, n, &len);
	bool ok = got && strlen(got) == len && strcmp(got, expect) == 0;

	for (size_t i = 0; ok && i < len; i++) {
		unsigned char c = (unsigned char)got[i];
		ok = (c >= 0x20 || c == '\n' || c == '\t') && c != 0x7f &&
		     !(c == 0xc2 && (unsigned char)got[i + 1] >= 0x80 &&
		       (unsigned char)got[i + 1] <= 0x9f);
	}
	if (!ok)
		printf("# text_for_terminal gave \"%s\", expected \"%s\"\n", got ? got : "(null)",
		       expect);
	free(got);
	return ok;
}

#define TERM_CASE(data, expect) ASSERT_TRUE(terminal_case(data, sizeof(data) - 1, expect))
#define FFFD			"\xef\xbf\xbd"

static void test_text_for_terminal(void)
{
	TERM_CASE("plain text, tab\tand\nlines\n", "plain text, tab\tand\nlines\n");
	TERM_CASE("h\xc3\xa9llo \xe2\x9c\x93", "h\xc3\xa9llo \xe2\x9c\x93");
	/* the sequences of the attack: title, clear, clipboard write, C1 CSI */
	TERM_CASE("a\x1b]0;pwned\x07"
		  "b",
		  "ab");
	TERM_CASE("a\x1b[2J\x1b[1;31mred\x1b[0m", "ared");
	TERM_CASE("\x1b]52;c;ZWNobyBwd25lZA==\x07"
		  "after",
		  "after");
	TERM_CASE("\x1b]52;c;ZWNobyBwd25lZA==\x1b\\after", "after");
	TERM_CASE("x\xc2\x9b"
		  "2Jy",
		  "xy");
	TERM_CASE("x\xc2\x9d"
		  "0;t\xc2\x9cy",
		  "xy");
	/* a bare 8-bit C1 byte and an overlong ESC are ill-formed UTF-8 */
	TERM_CASE("x\x9b"
		  "2J",
		  "x" FFFD "2J");
	TERM_CASE("x\xc0\x9b[2J", "x" FFFD FFFD "[2J");
	/* other controls stay visible as U+FFFD */
	TERM_CASE("safe\rEVIL", "safe" FFFD "EVIL");
	TERM_CASE("a\bb\x7f"
		  "c\xc2\x85"
		  "d",
		  "a" FFFD "b" FFFD "c" FFFD "d");
	TERM_CASE("a\0b", "a" FFFD "b");
	TERM_CASE("ab\xe2\x80\xae"
		  "cd",
		  "ab" FFFD "cd"); /* RIGHT-TO-LEFT OVERRIDE */
	/* two-byte escapes, charset designations, DCS and APC strings */
	TERM_CASE("\x1b"
		  "c\x1b"
		  "7a\x1b(Bb\x1bP1$r\x1b\\c\x1b_apc\x07"
		  "d",
		  "abcd");
	/* an unterminated string ends at the newline, not the end of the text */
	TERM_CASE("a\x1b]0;title\nshown\n", "a\nshown\n");
	/* an escape inside a string ends it and is dropped too */
	TERM_CASE("a\x1b]0;t\x1b[2Jb", "ab");
	/* a control ends a control sequence unfinished */
	TERM_CASE("a\x1b[1;2\x01"
		  "b",
		  "a" FFFD "b");
	TERM_CASE("a\x1b[1;2\nb", "a\nb");
	/* a lone ESC, at the end or before a non-ASCII byte */
	TERM_CASE("a\x1b", "a");
	TERM_CASE("a\x1b\xc3\xa9", "a\xc3\xa9");
	TERM_CASE("a\x1b\x1b[2Jb", "ab");
	TERM_CASE("", "");
}

static void test_base64(void)
{
	char *s = base64_encode("\xff\x00\x01", 3);

	ASSERT_EQ_STR(s, "/wAB");
	free(s);
}

static void test_env_names(void)
{
	ASSERT_TRUE(env_name_is_valid("PATH"));
	ASSERT_TRUE(env_name_is_valid("_x1"));
	ASSERT_TRUE(!env_name_is_valid("1X"));
	ASSERT_TRUE(!env_name_is_valid("A=B"));
	ASSERT_TRUE(!env_name_is_valid(""));
}

static void test_strv(void)
{
	char **v = NULL;

	ASSERT_EQ_INT(strv_push(&v, "a"), 0);
	ASSERT_EQ_INT(strv_push(&v, "b"), 0);
	ASSERT_EQ_INT(strv_length(v), 2);
	ASSERT_TRUE(strv_contains(v, "b"));
	ASSERT_TRUE(!strv_contains(v, "c"));
	strv_free(v);
}

static void test_strv_env(void)
{
	char *env[] = { (char *)"PATHX=1", (char *)"PATH=/bin", (char *)"EMPTY=", NULL };

	ASSERT_EQ_STR(strv_env_get(env, "PATH"), "/bin");
	ASSERT_EQ_STR(strv_env_get(env, "EMPTY"), "");
	ASSERT_TRUE(strv_env_get(env, "PAT") == NULL);
	ASSERT_TRUE(strv_env_get(NULL, "PATH") == NULL);
	ASSERT_TRUE(strv_env_entry_is("A=b", "A"));
	ASSERT_TRUE(!strv_env_entry_is("AB=b", "A"));
}

static void test_file_write_atomic_never_replaces(void)
{
	char dir[] = "/tmp/airlock-unit-XXXXXX";
	struct error err = { 0 };

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(file_write_atomic(fd, "a", "one", 3, 0600, true, &err), 0);
	ASSERT_EQ_INT(file_write_atomic(fd, "a", "two", 3, 0600, true, &err), -EEXIST);
	char *data = NULL;
	size_t n;
	ASSERT_EQ_INT(file_read_capped(fd, "a", 100, &data, &n, &err), 0);
	ASSERT_EQ_STR(data, "one");
	free(data);
	ASSERT_EQ_INT(file_read_capped(fd, "a", 2, &data, &n, &err), -EFBIG);
	unlinkat(fd, "a", 0);
	close(fd);
	rmdir(dir);
}

/* A pipe whose writer never closes: the reader's deadline ends it. */
static void test_fd_read_capped_until_deadline(void)
{
	struct error err = { 0 };
	char *data = NULL;
	size_t n = 0;
	int p[2];

	ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
	ASSERT_EQ_INT(write(p[1], "ab", 2), 2);
	uint64_t deadline = clock_monotonic_ns() + 50 * 1000000ULL;
	ASSERT_EQ_INT(fd_read_capped_until(p[0], 100, deadline, &data, &n, &err), -ETIMEDOUT);
	ASSERT_TRUE(clock_monotonic_ns() >= deadline);
	ASSERT_TRUE(data == NULL);
	/* A deadline already past: -ETIMEDOUT at once, even with bytes there. */
	ASSERT_EQ_INT(fd_read_capped_until(p[0], 100, 0, &data, &n, &err), -ETIMEDOUT);
	close(p[1]);
	/* Closed: the rest to its end, the deadline not reached. */
	deadline = clock_monotonic_ns() + 10000 * 1000000ULL;
	ASSERT_EQ_INT(fd_read_capped_until(p[0], 100, deadline, &data, &n, &err), 0);
	ASSERT_EQ_INT(n, 0); /* "ab" went with the first read */
	ASSERT_EQ_STR(data, "");
	free(data);
	close(p[0]);
}

/* Over the cap: -EFBIG, with a deadline or without; the cap itself fits. */
static void test_fd_read_capped_until_cap(void)
{
	struct error err = { 0 };
	char *data = NULL;
	size_t n = 0;
	uint64_t deadlines[] = { FD_NO_DEADLINE, clock_monotonic_ns() + 10000 * 1000000ULL };

	for (size_t i = 0; i < 2; i++) {
		int p[2];
		ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
		ASSERT_EQ_INT(write(p[1], "0123456789", 10), 10);
		close(p[1]);
		ASSERT_EQ_INT(fd_read_capped_until(p[0], 9, deadlines[i], &data, &n, &err), -EFBIG);
		close(p[0]);
		ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
		ASSERT_EQ_INT(write(p[1], "0123456789", 10), 10);
		close(p[1]);
		ASSERT_EQ_INT(fd_read_capped_until(p[0], 10, deadlines[i], &data, &n, &err), 0);
		ASSERT_EQ_INT(n, 10);
		ASSERT_EQ_STR(data, "0123456789");
		free(data);
		data = NULL;
		close(p[0]);
	}
}

static volatile sig_atomic_t test_basic_alarms;

static void test_basic_on_alarm(int sig)
{
	(void)sig;
	test_basic_alarms++;
}

/* Signals (no SA_RESTART) interrupt the wait many times over: the read goes
 * on to the writer's end. */
static void test_fd_read_capped_until_eintr(void)
{
	struct error err = { 0 };
	char *data = NULL;
	size_t n = 0;
	int p[2];

	ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		usleep(100 * 1000);
		_exit(write(p[1], "late", 4) == 4 ? 0 : 1);
	}
	close(p[1]);
	struct sigaction sa = { .sa_handler = test_basic_on_alarm }, old;
	ASSERT_EQ_INT(sigaction(SIGALRM, &sa, &old), 0);
	struct itimerval every = { .it_interval = { .tv_usec = 5000 }, .it_value = { .tv_usec = 5000 } };
	struct itimerval off = { 0 };
	test_basic_alarms = 0;
	ASSERT_EQ_INT(setitimer(ITIMER_REAL, &every, NULL), 0);
	uint64_t deadline = clock_monotonic_ns() + 10000 * 1000000ULL;
	int r = fd_read_capped_until(p[0], 100, deadline, &data, &n, &err);
	(void)setitimer(ITIMER_REAL, &off, NULL);
	(void)sigaction(SIGALRM, &old, NULL);
	close(p[0]);
	int status;
	ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
	ASSERT_EQ_INT(r, 0);
	ASSERT_EQ_STR(data, "late");
	ASSERT_EQ_INT(n, 4);
	ASSERT_TRUE(test_basic_alarms > 0);
	free(data);
}

static void test_path_helpers(void)
{
	ASSERT_TRUE(path_is_under("/a/b", "/a"));
	ASSERT_TRUE(path_is_under("/a", "/a"));
	ASSERT_TRUE(!path_is_under("/ab", "/a"));
	ASSERT_TRUE(path_is_under("/x", "/"));
	ASSERT_TRUE(!path_is_under("x", "/"));
	char *s = path_join("/a", "b");
	ASSERT_EQ_STR(s, "/a/b");
	free(s);
	s = path_join("/", "b");
	ASSERT_EQ_STR(s, "/b");
	free(s);
	s = path_dirname("/a/b");
	ASSERT_EQ_STR(s, "/a");
	free(s);
	s = path_dirname("/a");
	ASSERT_EQ_STR(s, "/");
	free(s);
}

static struct {
	double (*cos)(double);
	double (*floor)(double);
	void (*absent)(void);
} dl_m;
static int dl_init_calls;

static int dl_init(struct error *err)
{
	(void)err;
	dl_init_calls++;
	return 0;
}

/* A real library: the first soname is absent, the second is libm; the
 * outcome is kept, init runs once. */
static void test_dynlib_loads_once(void)
{
	static struct dynlib lib = DYNLIB_INIT("libm", dl_init);
	static const char *const sonames[] = { "libairlock-absent.so.0", "libm.so.6", NULL };
	static const struct dynlib_symbol symbols[] = {
		{ "cos", (void **)&dl_m.cos },
		{ "floor", (void **)&dl_m.floor },
		{ NULL, NULL },
	};
	struct error err = { 0 };

	ASSERT_EQ_INT(dynlib_load(&lib, sonames, symbols, &err), 0);
	ASSERT_TRUE(dl_m.cos && dl_m.floor);
	ASSERT_TRUE(dl_m.cos(0.0) == 1.0);
	ASSERT_TRUE(dl_m.floor(2.5) == 2.0);
	ASSERT_EQ_INT(dynlib_load(&lib, sonames, symbols, NULL), 0);
	ASSERT_EQ_INT(dl_init_calls, 1);
	ASSERT_EQ_INT(err.code, 0);
}

static void test_dynlib_absent_soname(void)
{
	static struct dynlib lib = DYNLIB_INIT("a test library", NULL);
	static const char *const sonames[] = { "libairlock-absent.so.0", "libairlock-absent.so.1",
					       NULL };
	static const struct dynlib_symbol symbols[] = { { "cos", (void **)&dl_m.absent },
							{ NULL, NULL } };
	struct error err = { 0 };

	ASSERT_EQ_INT(dynlib_load(&lib, sonames, symbols, &err), -ENOPKG);
	ASSERT_TRUE(strstr(err.msg, "a test library (libairlock-absent.so.0 or "
				    "libairlock-absent.so.1) cannot be loaded: ") == err.msg);
	ASSERT_TRUE(!strchr(err.msg, '\n'));
	ASSERT_TRUE(!dl_m.absent);
	error_clear(&err);
	ASSERT_EQ_INT(dynlib_load(&lib, sonames, symbols, &err), -ENOPKG); /* remembered */
	ASSERT_TRUE(strstr(err.msg, "cannot be loaded"));
}

static void test_dynlib_missing_symbol(void)
{
	static struct dynlib lib = DYNLIB_INIT("libz", NULL);
	static const char *const sonames[] = { "libz.so.1", NULL };
	void *found = NULL, *missing = NULL;
	const struct dynlib_symbol symbols[] = {
		{ "zlibVersion", &found },
		{ "airlock_no_such_symbol", &missing },
		{ NULL, NULL },
	};
	struct error err = { 0 };

	ASSERT_EQ_INT(dynlib_load(&lib, sonames, symbols, &err), -ENOPKG);
	ASSERT_EQ_STR(err.msg, "libz (libz.so.1) has no airlock_no_such_symbol");
	ASSERT_TRUE(!found && !missing); /* no half-filled table */
}

static int dl_init_fails(struct error *err)
{
	return error_set(err, EIO, "the global init failed");
}

static void test_dynlib_init_failure(void)
{
	static struct dynlib lib = DYNLIB_INIT("libm", dl_init_fails);
	static const char *const sonames[] = { "libm.so.6", NULL };
	void *found = NULL;
	const struct dynlib_symbol symbols[] = { { "cos", &found }, { NULL, NULL } };
	struct error err = { 0 };

	ASSERT_EQ_INT(dynlib_load(&lib, sonames, symbols, &err), -EIO);
	ASSERT_EQ_STR(err.msg, "libm (libm.so.6): the global init failed");
	ASSERT_TRUE(!found);
}

/* clock_format_rfc3339() computes the date itself: it agrees with
 * gmtime_r() at the epoch, around leap days and centuries, and over a
 * stride of days up to 2499 (a uint64_t of ns ends in 2554). */
static void test_clock_format_rfc3339(void)
{
	static const uint64_t fixed[] = { 0,	      951782400,  951868799, 4107542400,
					  4107628799, 1764892800, 68169600,  16725225599 };
	char got[64], want[64];
	uint64_t secs;

	clock_format_rfc3339(1764902183123456789ULL, got, sizeof(got));
	ASSERT_EQ_STR(got, "2025-12-05T02:36:23.123Z");
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) + 400000; i++) {
		secs = i < sizeof(fixed) / sizeof(fixed[0])
			       ? fixed[i]
			       : (uint64_t)(i - sizeof(fixed) / sizeof(fixed[0])) * 633491;
		if (secs > 16725225599ULL)
			break;
		time_t t = (time_t)secs;
		struct tm tm;
		ASSERT_TRUE(gmtime_r(&t, &tm));
		snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.007Z", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		clock_format_rfc3339(secs * 1000000000ULL + 7000000, got, sizeof(got));
		ASSERT_EQ_STR(got, want);
	}
}

/* A temporary directory for dirread's tests, removed by dirread_rm(). */
static char *dirread_tmp(void)
{
	char *dir = strdup("/tmp/airlock-dirread-XXXXXX");
	if (dir && !mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static int dirread_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void dirread_rm(char *dir)
{
	if (nftw(dir, dirread_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		printf("# could not remove %s\n", dir);
	free(dir);
}

#define DIRREAD_TEST_FILES 600

/* Names over many reads of a small buffer (DIRREAD_BUF_MIN, and one that
 * is not aligned): each once, "." and ".." never, with its length and type. */
static void test_dirread_many_names(void)
{
	char *dir = dirread_tmp();
	char path[PATH_MAX];
	static bool seen[DIRREAD_TEST_FILES + 2];
	static char buf[DIRREAD_BUF_MIN + 1];

	ASSERT_TRUE(dir != NULL);
	for (int i = 0; i < DIRREAD_TEST_FILES; i++) {
		snprintf(path, sizeof(path), "%s/file-%04d-with-a-longer-name", dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		ASSERT_TRUE(fd >= 0);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/sub", dir);
	ASSERT_EQ_INT(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/link", dir);
	ASSERT_EQ_INT(symlink("sub", path), 0);
	for (size_t skew = 0; skew < 2; skew++) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ASSERT_TRUE(fd >= 0);
		struct dirread d;
		struct dirread_entry e;
		size_t n = 0;
		int r;
		memset(seen, 0, sizeof(seen));
		dirread_init(&d, fd, buf + skew, DIRREAD_BUF_MIN);
		while ((r = dirread_next(&d, &e)) > 0) {
			int i = -1;
			unsigned char type = DT_REG;
			ASSERT_EQ_INT(e.len, strlen(e.name));
			if (strcmp(e.name, "sub") == 0) {
				i = DIRREAD_TEST_FILES;
				type = DT_DIR;
			} else if (strcmp(e.name, "link") == 0) {
				i = DIRREAD_TEST_FILES + 1;
				type = DT_LNK;
			} else {
				ASSERT_EQ_INT(sscanf(e.name, "file-%d-with-a-longer-name", &i), 1);
				ASSERT_TRUE(i >= 0 && i < DIRREAD_TEST_FILES);
			}
			ASSERT_TRUE(!seen[i]);
			seen[i] = true;
			ASSERT_TRUE(e.type == type || e.type == DT_UNKNOWN);
			n++;
		}
		ASSERT_EQ_INT(r, 0);
		ASSERT_EQ_INT(n, DIRREAD_TEST_FILES + 2);
		ASSERT_EQ_INT(dirread_next(&d, &e), 0); /* the end stays the end */
		close(fd);
	}
	dirread_rm(dir);
}

/* Names NAME_MAX bytes long, read with the least buffer. */
static void test_dirread_name_max(void)
{
	char *dir = dirread_tmp();
	char path[PATH_MAX], name[NAME_MAX + 1];
	char buf[DIRREAD_BUF_MIN];

	ASSERT_TRUE(dir != NULL);
	memset(name, 'n', NAME_MAX);
	name[NAME_MAX] = '\0';
	for (int c = 'a'; c <= 'e'; c++) {
		name[0] = (char)c;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		ASSERT_TRUE(fd >= 0);
		close(fd);
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	struct dirread d;
	struct dirread_entry e;
	unsigned seen = 0;
	int r;
	dirread_init(&d, fd, buf, sizeof(buf));
	while ((r = dirread_next(&d, &e)) > 0) {
		ASSERT_EQ_INT(e.len, NAME_MAX);
		ASSERT_EQ_INT(strlen(e.name), NAME_MAX);
		ASSERT_TRUE(e.name[0] >= 'a' && e.name[0] <= 'e');
		ASSERT_TRUE(memcmp(e.name + 1, name + 1, NAME_MAX - 1) == 0);
		ASSERT_TRUE(!(seen & (1u << (e.name[0] - 'a'))));
		seen |= 1u << (e.name[0] - 'a');
	}
	ASSERT_EQ_INT(r, 0);
	ASSERT_EQ_INT(seen, 0x1f);
	/* A buffer too small for one entry fails, as documented. */
	ASSERT_EQ_INT(lseek(fd, 0, SEEK_SET), 0);
	dirread_init(&d, fd, buf, 64);
	ASSERT_EQ_INT(dirread_next(&d, &e), -EINVAL);
	close(fd);
	dirread_rm(dir);
}

/* An empty directory has no names ("." and ".." are none); a descriptor
 * that is no directory, or none, fails with the read's errno. */
static void test_dirread_empty_and_errors(void)
{
	char *dir = dirread_tmp();
	char path[PATH_MAX];
	char buf[4096];
	struct dirread d;
	struct dirread_entry e;

	ASSERT_TRUE(dir != NULL);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	dirread_init(&d, fd, buf, sizeof(buf));
	ASSERT_EQ_INT(dirread_next(&d, &e), 0);
	ASSERT_EQ_INT(dirread_next(&d, &e), 0);
	close(fd);

	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_TRUE(fd >= 0);
	dirread_init(&d, fd, buf, sizeof(buf));
	ASSERT_EQ_INT(dirread_next(&d, &e), -ENOTDIR);
	close(fd);
	dirread_init(&d, fd, buf, sizeof(buf)); /* closed */
	ASSERT_EQ_INT(dirread_next(&d, &e), -EBADF);
	dirread_rm(dir);
}

RUN_TESTS(T_(test_clock_format_rfc3339), T_(test_path_helpers), T_(test_parse_duration_units),
	  T_(test_parse_duration_rejects_garbage), T_(test_parse_int_bounds),
	  T_(test_parse_size_units), T_(test_error_prefix_nests_context),
	  T_(test_error_prefix_truncates_safely), T_(test_sha256_known_vectors),
	  T_(test_capture_keeps_head_and_tail), T_(test_capture_tail_wraps_byte_by_byte),
	  T_(test_capture_short_stream_is_whole), T_(test_utf8_validation),
	  T_(test_text_for_terminal), T_(test_base64), T_(test_env_names), T_(test_strv),
	  T_(test_strv_env), T_(test_file_write_atomic_never_replaces),
	  T_(test_fd_read_capped_until_deadline), T_(test_fd_read_capped_until_cap),
	  T_(test_fd_read_capped_until_eintr), T_(test_dynlib_loads_once),
	  T_(test_dynlib_absent_soname), T_(test_dynlib_missing_symbol), T_(test_dynlib_init_failure),
	  T_(test_dirread_many_names), T_(test_dirread_name_max), T_(test_dirread_empty_and_errors))
