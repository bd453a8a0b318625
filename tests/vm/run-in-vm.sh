#!/bin/bash
# run-in-vm.sh - run one command in a throw-away QEMU guest that boots a
# stock Debian kernel, for what the host's own kernel cannot show: BPF-LSM
# programs (refused with EPERM on many hosts), other kernel versions, a
# cgroup2-only machine.
#
#   tests/vm/run-in-vm.sh PAYLOAD_DIR CMD [ARG...]
#
# The guest gets PAYLOAD_DIR at /payload (tmpfs, writable) and runs CMD (the
# arguments joined with spaces, as ssh does) with busybox sh -c, cwd /payload,
# stdin /dev/null, PATH=/payload/bin:/payload:/usr/bin:... Its serial console
# is streamed to stdout. The exit status is the command's; besides:
#   124  the guest ran past VM_TIMEOUT and qemu was killed
#   125  the lane itself failed, or the guest died after the command started
#        (a kernel panic, say); a guest that dies before the command starts
#        is booted again, VM_BOOT_RETRIES times
#
# The kernel comes from Debian's archive: `apt-get download`, unpacked with
# `dpkg -x` into VM_CACHE. Nothing is installed: no package, nothing in
# /boot, no host mount, cgroup or BPF object. The only process started is
# qemu (pure emulation, TCG, unless /dev/kvm works); the work dir (mktemp)
# is removed on exit.
#
# Settings (environment):
#   VM_KERNEL_PKG  kernel package; default: what linux-image-cloud-amd64
#                  depends on (6.1 on bookworm). A glob picks the newest
#                  match: 'linux-image-6.12.*-cloud-amd64-unsigned'.
#   VM_APT_SUITE   take the kernel from this Debian suite instead ("sid",
#                  "trixie-backports"): apt runs with a private state dir in
#                  VM_CACHE against the mirror the host already uses; the
#                  host's apt configuration and lists are not touched.
#   VM_MODULES     modules to insmod at boot ("overlay veth"), with the
#                  modules they depend on, from the same kernel package.
#   VM_BINS        host binaries copied to the same path in the guest, with
#                  the shared libraries ldd lists (for cgo binaries).
#   VM_LSM         the kernel's lsm= (landlock,lockdown,yama,bpf)
#   VM_APPEND      more kernel command line
#   VM_TIMEOUT     seconds before qemu is killed (600)
#   VM_CACHE       downloaded and unpacked kernels (/var/cache/rauha-vm as
#                  root, else ~/.cache/rauha-vm)
#   VM_MEM, VM_SMP guest MiB and CPUs (1024, 2)
#   VM_ACCEL       qemu -accel; default kvm when a probe boot of the same
#                  guest with it reaches the command, else tcg,thread=single
#   VM_BOOT_RETRIES  boots to retry when the guest died before the command
#                  started (1)
#   VM_KEEP=1      keep the work dir (initramfs, serial log) and say where
#
# Needs qemu-system-x86, cpio, busybox-static and bash-static (installed by
# scripts/setup-debian.sh; this script installs missing ones when root).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The sentinel the guest init prints after the command; keep in step with
# tests/vm/guest-init.sh.
SENTINEL='RAUHA-VM-EXIT'
BANNER='rauha-vm: running'

say() { echo "run-in-vm: $*" >&2; }
die() {
	say "$*"
	exit 125
}
# Any other failure is the lane's too: 125, never a status the guest
# command could have returned.
trap 'die "unexpected failure at line $LINENO"' ERR

if [ $# -lt 2 ]; then
	sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
	exit 125
fi
payload=$1
shift
cmd="$*"
[ -d "$payload" ] || die "payload $payload is not a directory"

if [ "$(id -u)" = 0 ]; then
	cache=${VM_CACHE:-/var/cache/rauha-vm}
else
	cache=${VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rauha-vm}
fi
timeout_s=${VM_TIMEOUT:-600}
t_start=$SECONDS

# ensure_tools: the host packages the lane runs on. busybox must be the
# static build: the guest has no libc of its own.
ensure_tools() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	command -v cpio >/dev/null || missing+=(cpio)
	[ -x /bin/bash-static ] || missing+=(bash-static)
	if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
		missing+=(busybox-static)
	fi
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (run scripts/setup-debian.sh as root)"
	say "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
		die "apt-get install ${missing[*]} failed"
}

# apt_opts: the options every apt call for the kernel takes. With
# VM_APT_SUITE the sources list, lists and archive cache are private to the
# cache dir (the host's mirror, another suite), refreshed once a day (apt
# dates the lists by the archive's Last-Modified, hence the stamp file).
apt_opts=(-o APT::Sandbox::User=root)
setup_apt() {
	local suite=${VM_APT_SUITE:-}
	[ -n "$suite" ] || return 0
	local d=$cache/apt/$suite mirror
	mkdir -p "$d/lists/partial" "$d/archives/partial"
	apt_opts+=(-o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d" -o "Dir::Cache::Archives=$d/archives"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
	if [ ! -s "$d/sources.list" ]; then
		mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' |
			awk '$2 !~ /-security$/ {print $1; exit}')
		[ -n "$mirror" ] || die "VM_APT_SUITE=$suite: the host's apt sources name no Debian mirror"
		echo "deb $mirror $suite main" >"$d/sources.list"
	fi
	if [ -z "$(find "$d/updated" -mtime -1 2>/dev/null)" ]; then
		say "apt-get update for $suite (private lists in $d)"
		apt-get "${apt_opts[@]}" update >&2 || die "apt-get update for $suite failed"
		touch "$d/updated"
	fi
}

# resolve_kernel: the package name VM_KERNEL_PKG stands for.
resolve_kernel() {
	local want=${VM_KERNEL_PKG:-} n
	case $want in
	'')
		want=$(apt-cache "${apt_opts[@]}" depends linux-image-cloud-amd64 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
		[ -n "$want" ] || die "apt knows no linux-image-cloud-amd64 (run apt-get update, or set VM_KERNEL_PKG)"
		;;
	*'*'*)
		want=$(apt-cache "${apt_opts[@]}" pkgnames "${want%%\**}" 2>/dev/null |
			while read -r n; do
				# shellcheck disable=SC2053 # VM_KERNEL_PKG is a glob
				[[ $n == $VM_KERNEL_PKG ]] && echo "$n"
			done | sort -V | tail -n1)
		[ -n "$want" ] || die "no package matches VM_KERNEL_PKG=$VM_KERNEL_PKG"
		;;
	esac
	echo "$want"
}

# fetch_kernel PKG: unpack PKG into $cache/kernels/PKG once. Newer kernels
# (7.x) ship the image, the modules and the vmlinuz in separate packages the
# image package depends on, all named with its version: those come too. The
# .debs go once unpacked.
fetch_kernel() {
	local pkg=$1 dir=$cache/kernels/$1 ver=${1#linux-image-} p deb
	ver=${ver%-unsigned}
	[ -e "$dir/.complete" ] && return 0
	say "fetching $pkg"
	local pkgs=("$pkg")
	for p in $(apt-cache "${apt_opts[@]}" show --no-all-versions "$pkg" 2>/dev/null |
		sed -n 's/^Depends: //p' | tr ',|' '\n\n' | awk '{print $1}'); do
		if [[ $p == linux-*-"$ver" && $p != "$pkg" ]]; then pkgs+=("$p"); fi
	done
	local debs=$cache/download
	rm -rf "$debs" "$dir"
	mkdir -p "$debs" "$dir"
	(cd "$debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]}" >&2) ||
		die "apt-get download ${pkgs[*]} failed (apt-get update may help)"
	for deb in "$debs"/*.deb; do
		dpkg -x "$deb" "$dir"
	done
	rm -rf "$debs"
	touch "$dir/.complete"
}

# find_kernel DIR: sets vmlinuz and moddir. bookworm puts the image in
# boot/vmlinuz-VER and modules in lib/modules/VER; 7.x has both under
# usr/lib/modules/VER.
find_kernel() {
	local d=$1 kver
	vmlinuz=$(ls "$d"/boot/vmlinuz-* "$d"/usr/lib/modules/*/vmlinuz "$d"/lib/modules/*/vmlinuz 2>/dev/null | head -n1 || true)
	[ -n "$vmlinuz" ] || die "no vmlinuz in $d"
	case $vmlinuz in
	*/boot/vmlinuz-*) kver=${vmlinuz##*/vmlinuz-} ;;
	*) kver=$(basename "$(dirname "$vmlinuz")") ;;
	esac
	moddir=$d/lib/modules/$kver
	[ -d "$moddir" ] || moddir=$d/usr/lib/modules/$kver
	[ -d "$moddir" ] || die "no modules for $kver in $d"
}

# copy_in PATH: a host file at the same path in the guest (links followed).
# The guest path may be a busybox applet link: replace it, never write
# through it.
copy_in() {
	local dst=$root$1
	[ -e "$dst" ] && [ ! -L "$dst" ] && return 0
	mkdir -p "$(dirname "$dst")"
	rm -f "$dst"
	cp -L "$1" "$dst"
}

# add_module NAME: the module, decompressed for busybox insmod, after the
# modules it depends on. Debian's packages carry no modules.dep (depmod
# runs at install), so dependencies come from the module's .modinfo.
declare -A mod_file=() mod_done=()
add_module() {
	local name=${1//-/_} src out dep
	[ -n "${mod_done[$name]:-}" ] && return 0
	mod_done[$name]=1
	src=${mod_file[$name]:-}
	if [ -z "$src" ]; then
		grep -qE "/${name//_/[-_]}\.ko" "$moddir/modules.builtin" 2>/dev/null && return 0
		die "module $name is neither built in nor shipped in $kernel_pkg"
	fi
	out=$root/lib/modules/$name.ko
	case $src in
	*.xz) xz -dc "$src" >"$out" ;;
	*.zst) zstd -qdc "$src" >"$out" ;;
	*.gz) gzip -dc "$src" >"$out" ;;
	*) cp "$src" "$out" ;;
	esac
	for dep in $(tr '\0' '\n' <"$out" | grep -a '^depends=' | head -n1 | cut -d= -f2 | tr ',' ' '); do
		add_module "$dep"
	done
	echo "/lib/modules/$name.ko" >>"$root/etc/rauha-vm/modules"
}

# build_initramfs: busybox + bash + VM_BINS + modules + payload + the
# command, as a newc cpio in $work/initrd.
build_initramfs() {
	local b lib m
	root=$work/root
	# merged /usr: every program in usr/bin, the other bin dirs link there
	mkdir -p "$root"/usr/bin "$root"/usr/lib "$root"/usr/lib64
	ln -s usr/bin "$root/bin"
	ln -s usr/bin "$root/sbin"
	ln -s bin "$root/usr/sbin"
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	mkdir -p "$root"/etc/rauha-vm "$root"/lib/modules "$root"/{dev,proc,sys,tmp,run,root,payload,newroot}
	chmod 1777 "$root/tmp"
	cp /bin/busybox "$root/usr/bin/busybox"
	# links to the host's busybox path, which leads to usr/bin in the guest
	/bin/busybox --install -s "$root/usr/bin"
	rm -f "$root/usr/bin/bash"
	cp /bin/bash-static "$root/usr/bin/bash"
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$root/etc/passwd"
	printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
	echo '127.0.0.1 localhost' >"$root/etc/hosts"

	for b in ${VM_BINS:-}; do
		[ -f "$b" ] && [ -x "$b" ] || die "VM_BINS: $b is not an executable file"
		copy_in "$b"
		for lib in $(ldd "$b" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
			copy_in "$lib"
		done
	done

	: >"$root/etc/rauha-vm/modules"
	if [ -n "${VM_MODULES:-}" ]; then
		local f n
		while IFS= read -r f; do
			n=${f##*/}
			n=${n%%.ko*}
			mod_file[${n//-/_}]=$f
		done < <(find "$moddir/kernel" -name '*.ko*')
		for m in $VM_MODULES; do add_module "$m"; done
	fi

	cp -a "$payload"/. "$root/payload/"
	printf '%s\n' "$cmd" >"$root/etc/rauha-vm/cmd"
	install -m 0755 "$here/guest-init.sh" "$root/init"
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/initrd" ||
		die "cpio failed"
}

# run_qemu ACCEL SECONDS LOG [KERNEL-ARG...]: boot the guest once, the raw
# serial console to stdout and LOG; the status is qemu's (124 or 137 when
# timeout killed it).
run_qemu() {
	local accel=$1 secs=$2 log=$3
	shift 3
	timeout -k 5 "$secs" qemu-system-x86_64 -accel "$accel" -m "${VM_MEM:-1024}" -smp "${VM_SMP:-2}" \
		-nodefaults -no-user-config -display none -monitor none -no-reboot -serial stdio \
		-kernel "$vmlinuz" -initrd "$work/initrd" \
		-append "console=ttyS0 panic=-1 rdinit=/init quiet lsm=${VM_LSM:-landlock,lockdown,yama,bpf} ${VM_APPEND:-} $*" \
		</dev/null 2>&1 | tee "$log"
}

# pick_accel: kvm only where it boots this very guest to the command (a
# /dev/kvm that opens may still fail a guest, e.g. nested virtualisation
# that dumps the registers and stops): the probe boot runs the guest init
# up to the point the command would start.
pick_accel() {
	if [ -n "${VM_ACCEL:-}" ]; then
		echo "$VM_ACCEL"
	elif [ -w /dev/kvm ] && run_qemu kvm 60 "$work/probe.log" rauha_vm.probe >/dev/null &&
		grep -aq "^$SENTINEL=0" "$work/probe.log"; then
		echo kvm
	else
		[ -w /dev/kvm ] && [ -z "${VM_ACCEL:-}" ] && say "kvm did not boot the guest; emulating (TCG)"
		# Single-threaded TCG: no slower on a small host, and it avoids the
		# cross-modifying-code races multi-threaded TCG has shown while a
		# kernel patches its own text at boot.
		echo tcg,thread=single
	fi
}

# boot: one run of the command; sets qemu_rc and guest_rc (the command's
# status from the sentinel, empty without one).
boot() {
	set +e
	run_qemu "$accel" "$timeout_s" "$work/serial.log" | sed -u -e 's/\r//g' -e "/^$SENTINEL=/d"
	qemu_rc=${PIPESTATUS[0]}
	set -e
	guest_rc=$(tr -d '\r' <"$work/serial.log" | sed -n "s/.*$SENTINEL=\([0-9][0-9]*\).*/\1/p" | tail -n1)
}

ensure_tools
mkdir -p "$cache"
# One apt update and fetch at a time per cache; others wait for it and
# reuse the result.
exec 9>"$cache/.lock"
flock 9
setup_apt
kernel_pkg=$(resolve_kernel)
fetch_kernel "$kernel_pkg"
exec 9>&-
find_kernel "$cache/kernels/$kernel_pkg"

work=$(mktemp -d /tmp/rauha-vm.XXXXXX)
cleanup() {
	if [ "${VM_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
build_initramfs
accel=$(pick_accel)
say "$kernel_pkg, initramfs $(du -m "$work/initrd" | cut -f1) MiB in $((SECONDS - t_start))s; booting ($accel, timeout ${timeout_s}s)"

retries=${VM_BOOT_RETRIES:-1}
while :; do
	t_boot=$SECONDS
	boot
	# Retry only a guest that never reached the command: rerunning one that
	# started could repeat its side effects and hide a crash it caused.
	[ -z "$guest_rc" ] && [ "$qemu_rc" != 124 ] && [ "$qemu_rc" != 137 ] && [ "$retries" -gt 0 ] &&
		! grep -aq "^$BANNER" "$work/serial.log" || break
	retries=$((retries - 1))
	say "the guest died before the command started (qemu exit $qemu_rc); booting again"
done
if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
	say "timed out after ${timeout_s}s; qemu killed"
	exit 124
fi
[ -n "$guest_rc" ] || die "the guest stopped without reporting an exit status (qemu exit $qemu_rc)"
say "command exited $guest_rc; vm $((SECONDS - t_boot))s, total $((SECONDS - t_start))s"
exit "$guest_rc"
