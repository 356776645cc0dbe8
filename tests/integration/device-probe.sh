#!/bin/sh
# device-probe.sh: tells whether an RDMA device is present for the integration tier.
# In `make check` it skips (exit 77) without one; with EZ_REQUIRE_DEVICE=1 it fails.
devs=$(ibv_devices 2>/dev/null | awk 'NR > 2 { print $1 }')
if [ -n "$EZ_DEVICE" ]; then
	echo "$devs" | grep -qx "$EZ_DEVICE" && devs=$EZ_DEVICE || devs=
fi
if [ -z "$devs" ]; then
	echo "integration tier: no RDMA device${EZ_DEVICE:+ named $EZ_DEVICE} here (ibv_devices lists none)."
	echo "It needs real hardware or Soft-RoCE; './dev.sh test' boots a Soft-RoCE VM and runs it."
	[ "$EZ_REQUIRE_DEVICE" = 1 ] && exit 1
	exit 77
fi
echo "integration tier: device(s) present: $(echo $devs); run 'make check-integration'."
exit 0
