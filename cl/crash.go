package cl

/*
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// A kernel running on a CPU device (PoCL's worker threads) that writes far outside its
// buffers ends in SIGSEGV or SIGBUS on a thread Go does not own. Go forwards such a
// signal to a handler installed before its own, and would otherwise let the default
// action kill the process without a word. This handler names what the device was
// running (the notes of the networks in an inference) and exits with status 1.

#define CL_NOTES 256
static const char* cl_notes[CL_NOTES];
static int cl_running[CL_NOTES];
static int cl_crash_fd = 2;

static void cl_write(const char* s) {
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = write(cl_crash_fd, s, n);
		if (w <= 0) return;
		s += w;
		n -= (size_t)w;
	}
}

// cl_hex writes v in hexadecimal: snprintf is not async-signal-safe.
static void cl_hex(uintptr_t v) {
	char buf[2 + 2 * sizeof v + 1];
	int i = sizeof buf - 1;
	buf[i] = 0;
	do {
		buf[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && i > 2);
	buf[--i] = 'x';
	buf[--i] = '0';
	cl_write(buf + i);
}

static int cl_faulting;

static void cl_fault(int sig, siginfo_t* info, void* ctx) {
	(void)ctx;
	// A kernel's work-items fault on several of the driver's threads at once: the first
	// writes the report and ends the process, the others wait for it, so that the
	// reports do not interleave.
	if (__atomic_exchange_n(&cl_faulting, 1, __ATOMIC_SEQ_CST)) {
		for (;;) pause();
	}
	cl_write("\nclhost: ");
	cl_write(sig == SIGBUS ? "SIGBUS" : "SIGSEGV");
	cl_write(": code running outside Go (a kernel on a CPU device, or the OpenCL driver) accessed memory at ");
	cl_hex((uintptr_t)info->si_addr);
	int any = 0;
	for (int i = 0; i < CL_NOTES; i++) {
		if (__atomic_load_n(&cl_running[i], __ATOMIC_SEQ_CST) > 0 && cl_notes[i] != NULL) {
			cl_write(any ? "\n  and " : ", while the device ran\n  ");
			cl_write(cl_notes[i]);
			any = 1;
		}
	}
	if (!any) {
		cl_write(", while no inference was running");
	}
	cl_write("\n");
	_exit(1);
}

__attribute__((constructor)) static void cl_install_fault_handler(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = cl_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static void cl_set_crash_fd(int fd) { cl_crash_fd = fd; }
static void cl_set_note(int i, const char* s) { cl_notes[i] = s; }
static const char* cl_take_note(int i) { const char* s = cl_notes[i]; cl_notes[i] = NULL; return s; }
static int* cl_running_at(int i) { return &cl_running[i]; }
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// SetCrashOutput makes the fault report (see CrashNote) go to file descriptor fd
// instead of 2: a process whose fd 2 is a pipe it reads itself would lose the report
// with the process.
func SetCrashOutput(fd int) { C.cl_set_crash_fd(C.int(fd)) }

// CrashNote is a text that the fault report prints while the note is running: when a
// kernel on a CPU device faults (SIGSEGV or SIGBUS on a driver's thread), the process
// writes "clhost: SIGSEGV ... while the device ran" and every running note, then exits
// with status 1. A network's note names its custom layers, the likely cause.
type CrashNote struct {
	slot    int
	running *int32
}

var crashSlots struct {
	sync.Mutex
	used [C.CL_NOTES]bool
}

// NewCrashNote registers text; nil when every slot is taken (the report then omits it).
func NewCrashNote(text string) *CrashNote {
	crashSlots.Lock()
	defer crashSlots.Unlock()
	for i, used := range crashSlots.used {
		if used {
			continue
		}
		crashSlots.used[i] = true
		// The C string lives as long as the slot: the handler may read it at any time.
		C.cl_set_note(C.int(i), C.CString(text))
		return &CrashNote{slot: i, running: (*int32)(unsafe.Pointer(C.cl_running_at(C.int(i))))}
	}
	return nil
}

// Start marks the note running (calls nest); Stop undoes one Start. Both are atomic
// adds, cheap enough for every inference.
func (n *CrashNote) Start() {
	if n != nil {
		atomic.AddInt32(n.running, 1)
	}
}

// Stop undoes one Start.
func (n *CrashNote) Stop() {
	if n != nil {
		atomic.AddInt32(n.running, -1)
	}
}

// Free gives the slot back.
func (n *CrashNote) Free() {
	if n == nil {
		return
	}
	// Not running first: the handler reads only the texts of running notes.
	atomic.StoreInt32(n.running, 0)
	C.free(unsafe.Pointer(C.cl_take_note(C.int(n.slot))))
	crashSlots.Lock()
	crashSlots.used[n.slot] = false
	crashSlots.Unlock()
}
