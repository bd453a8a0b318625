#!/bin/sh
# guest-init.sh - PID 1 of a tests/vm/run-in-vm.sh guest (busybox sh).
#
# The kernel starts it on the initramfs, whose root cannot be pivot_root(2)ed
# away, and container runtimes need pivot_root. So the first run copies the
# initramfs into a tmpfs and switch_roots into it, passing "stage2"; the
# second run sets the machine up, runs the command from /etc/rauha-vm/cmd,
# prints RAUHA-VM-EXIT=<status> on the console and powers off.
export PATH=/payload/bin:/payload:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb

if [ "${1:-}" != stage2 ]; then
	mount -t tmpfs -o mode=0755 tmpfs /newroot
	# /tmp and /run are tmpfs mounts of their own from the start, filled
	# with what the initramfs has there (VM_BINS may live under /tmp): a
	# mount over them later would hide it. They move with /newroot.
	mkdir /newroot/tmp /newroot/run
	mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
	mount -t tmpfs -o mode=0755 tmpfs /newroot/run
	for e in /*; do
		[ "$e" = /newroot ] || cp -a "$e" /newroot/
	done
	exec switch_root /newroot /init stage2
fi

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t mqueue mqueue /dev/mqueue
# devtmpfs has no /dev/fd: bash's <(...) and /dev/stdin users need them.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
# cgroup v2 only, as on a systemd host; nsdelegate as systemd mounts it.
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -t bpf -o mode=0700 bpf /sys/fs/bpf
mount -t securityfs securityfs /sys/kernel/security
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
hostname rauha-vm
ip link set lo up

while read -r m; do
	insmod "$m" || echo "rauha-vm: insmod $m failed"
done </etc/rauha-vm/modules

echo "rauha-vm: running on $(uname -r), lsm=$(cat /sys/kernel/security/lsm), $(nproc) cpus, up $(cut -d' ' -f1 /proc/uptime)s"
# run-in-vm.sh's probe of an accelerator: the guest came this far.
case " $(cat /proc/cmdline) " in
*" rauha_vm.probe "*)
	echo "RAUHA-VM-EXIT=0"
	stty -echo </dev/console
	poweroff -f
	;;
esac
cd /payload || exit 1
sh -c "$(cat /etc/rauha-vm/cmd)" </dev/null
rc=$?
# stty sets the mode with TCSADRAIN: it returns once the UART has sent all
# the command wrote, so nothing is lost when the machine powers off.
stty -echo </dev/console
echo "RAUHA-VM-EXIT=$rc"
stty -echo </dev/console
poweroff -f
