//go:build !amd64 && !arm64

package landlock

// shimBinary is empty where no shim is built: Wrap then fails, so a process
// is never started unconfined.
var shimBinary []byte
