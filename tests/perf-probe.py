#!/usr/bin/env python3
# perf-probe.py: what the "signals" source of mrelease --follow asks of the
# kernel, and nothing more: the id of the tracepoint signal:signal_generate
# from tracefs, then perf_event_open of it on every CPU (pid -1, raw
# samples, disabled), each descriptor closed at once. unit.bats runs it as
# the ExecStart of a copy of the installed unit, to see what the unit's
# sandbox lets through. One line for the tracefs file read, then one a CPU:
# "cpu N: ok" or "cpu N: errno E (text)".
import ctypes
import os
import struct

PERF_TYPE_TRACEPOINT = 2
PERF_SAMPLE_RAW = 1 << 10
PERF_FLAG_FD_CLOEXEC = 1 << 3
ATTR_SIZE = 128  # the kernel takes a larger struct whose tail is zero
SYS_perf_event_open = {"x86_64": 298, "aarch64": 241}[os.uname().machine]

ID_FILES = ("/sys/kernel/tracing/events/signal/signal_generate/id",
            "/sys/kernel/debug/tracing/events/signal/signal_generate/id")


def tracepoint_id():
    for path in ID_FILES:
        try:
            with open(path) as f:
                return path, int(f.read())
        except OSError as e:
            print("%s: %s" % (path, e.strerror))
    raise SystemExit("no tracefs to read")


def online_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        for span in f.read().strip().split(","):
            first, _, last = span.partition("-")
            yield from range(int(first), int(last or first) + 1)


def main():
    path, tp = tracepoint_id()
    print("%s: %d" % (path, tp))
    libc = ctypes.CDLL(None, use_errno=True)
    # type, size, config, sample_period, sample_type, read_format, flags
    # (bit 0: disabled).
    attr = struct.pack("IIQQQQQ", PERF_TYPE_TRACEPOINT, ATTR_SIZE, tp, 1,
                       PERF_SAMPLE_RAW, 0, 1)
    buf = ctypes.create_string_buffer(attr + bytes(ATTR_SIZE - len(attr)), ATTR_SIZE)
    for cpu in online_cpus():
        fd = libc.syscall(SYS_perf_event_open, buf, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)
        if fd >= 0:
            os.close(fd)
            print("cpu %d: ok" % cpu)
        else:
            e = ctypes.get_errno()
            print("cpu %d: errno %d (%s)" % (cpu, e, os.strerror(e)))


main()
