// Package zone is Rauha's zone model: names, policies (TOML parsing,
// validation, presets), the bbolt state store, isolation reports and the
// per-zone deny-event log.
//
// Nothing here touches the kernel. The only side effects are files under the
// runtime root: <root>/rauha.db, <root>/containers-<boot id>.db and
// <root>/events/. Kernel enforcement lives
// behind libzone's Enforcer, which consumes the types defined here.
package zone
