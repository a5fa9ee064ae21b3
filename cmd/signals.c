/* signals.c: SIGINT, SIGTERM and SIGHUP during a run. They are held (blocked)
 * from the start of the run to its report, so that an interrupted run still
 * says what it did. The run lets them in while it waits (ppoll with the
 * wait mask), and looks for one pending before every signal it sends: one
 * that has come stops the run, and nothing more is sent. SIGPIPE is ignored
 * throughout: a closed stdout or stderr must not cut a run short; it shows
 * in the exit status. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>

#include "cli.h"

static const int held_signals[] = { SIGINT, SIGTERM, SIGHUP };
static volatile sig_atomic_t caught_signal;

static void catch_signal(int sig)
{
	caught_signal = sig;
}

/* Worker threads started afterwards inherit the mask. */
void mr_hold_signals(sigset_t *waitmask)
{
	struct sigaction sa = { .sa_handler = catch_signal };
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	for (size_t i = 0; i < MR_NELEMS(held_signals); i++)
		sigaddset(&set, held_signals[i]);
	/* Blocked first: one that came between the handler and the block
	 * would be caught, and then ignored for the whole run. */
	sigprocmask(SIG_BLOCK, &set, waitmask);
	for (size_t i = 0; i < MR_NELEMS(held_signals); i++) {
		sigaction(held_signals[i], &sa, NULL);
		sigdelset(waitmask, held_signals[i]);
	}
}

/* After the report: die of a signal that interrupted the run, or that came
 * after its last wait, as the caller expects of an interrupted command. */
void mr_release_signals(bool interrupted)
{
	sigset_t pending, set;
	int sig = interrupted ? caught_signal : 0;

	sigpending(&pending);
	sigemptyset(&set);
	for (size_t i = 0; i < MR_NELEMS(held_signals); i++) {
		if (sigismember(&pending, held_signals[i]))
			sig = held_signals[i];
		signal(held_signals[i], SIG_DFL);
		sigaddset(&set, held_signals[i]);
	}
	if (sig)
		raise(sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}
