// Package process starts a container's processes on libcontainer and wires
// them to the caller, as runc's command line does: the OCI process converted
// to a libcontainer one, stdio through pipes or a terminal (relayed, or
// handed to --console-socket), signals forwarded and children reaped, the
// sd_notify relay, the pid file, the pidfd socket and socket activation.
// Most of it is adapted from runc's main package (runner and setupIO in
// utils_linux.go, tty.go, signals.go, notify_socket.go, rlimit_linux.go);
// NOTICE lists the files. LookPathIn and the exec status FIFO are Rauha's:
// they report an entrypoint that cannot be executed when the Landlock shim,
// not libcontainer's init, does the exec.
//
// The package knows nothing of zones: the engine (libzone) takes hold of a
// process through Runner's Prepare, Ready and Started functions.
package process
