//go:build !rauha_profile

package main

// startCPUProfile profiles only in a build with -tags rauha_profile
// (profile.go).
func startCPUProfile() (stop func()) { return func() {} }
