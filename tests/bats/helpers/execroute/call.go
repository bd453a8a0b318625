package main

// call jumps to fn, machine code that follows the C calling convention for
// a function without arguments, and returns what it left in RAX.
func call(fn uintptr) uint64
