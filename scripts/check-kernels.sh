#!/usr/bin/env bash
# Runs every built-in kernel (builtin_kernels' test matrix), every kernel of configs/ (the
# host's end-to-end tests) and of samples/ (their tests; not the deliberately broken
# kernels of samples/onnx_custom_op/broken) under oclgrind, the OpenCL simulator, and fails
# on any invalid memory access, uninitialised value or data race it reports.
#
# The tests select oclgrind's device through CLHOST_TEST_DEVICE; the OpenCL loader is
# pointed at oclgrind's ICD alone, so nothing runs on another device by mistake.
set -uo pipefail
cd "$(dirname "$0")/.."
icd=/usr/lib/oclgrind/liboclgrind-rt-icd.so
[ -f "$icd" ] || { echo "oclgrind is not installed (apt-get install oclgrind)" >&2; exit 1; }
vendors=$(mktemp -d)
echo "$icd" > "$vendors/oclgrind.icd"
log=$(mktemp)
export OCL_ICD_VENDORS="$vendors" CLHOST_TEST_DEVICE=oclgrind
# OCLGRIND_UNINITIALIZED is left off: its plugin aborts on instructions oclgrind's own
# compiler emits. Unwritten outputs are caught instead by the NaN pre-fill of the tests.
export OCLGRIND_CHECK_API=1 OCLGRIND_DATA_RACES=1
# Programs are built without the optimizer (builtin_kernels' tests do so on oclgrind
# themselves), but for host's network tests below: oclgrind checks private arrays' bounds
# in the code it runs, and the optimizer's merged array indices read there as overruns
# that the source does not have.
export CLHOST_BUILD_OPTIONS=-cl-opt-disable
# The canary (cl) reads past a buffer on purpose: its report must reach the log.
export CLHOST_TEST_CANARY=1
start=$(date +%s)
status=0
# -v: go test keeps a passing package's output (oclgrind's reports) only in verbose mode.
# -vet=off: vetting is make vet's job (make test's first phase), not the simulator run's.
gotest() { go test -v -vet=off -count=1 -parallel 1 -timeout 60m "$@"; }
# host's network tests run built-in kernels only, which builtin_kernels' tests check
# unoptimized: they check the network's buffers, offsets and borrowed inputs, with programs
# built as clhost builds them (a third of the instructions to simulate), beside the
# unoptimized run.
networks='TestSplitBatchMatchesWhole|TestBorrowedInput.*|TestFireModules'
log2=$(mktemp)
CLHOST_BUILD_OPTIONS= gotest -run "^($networks)\$" ./host >"$log2" 2>&1 &
netpid=$!
# builtin_kernels takes longer than the rest together; its slowest tests run in a
# process of their own beside the others, so that both of a 2-core machine's cores
# stay busy (oclgrind spreads a launch's work-groups over threads, not a small launch's).
slow='TestGemmTilesAllCorrect|TestConvWinogradCPUPlan|TestFirePlan|TestRollingClaims|TestConvMaxPoolCPUPlan|TestHalfImplicitGemm'
log3=$(mktemp)
trap 'rm -rf "$vendors" "$log" "$log2" "$log3"' EXIT
gotest -run "^($slow)\$" ./builtin_kernels >"$log3" 2>&1 &
slowpid=$!
rest='TestOclgrindCanary|TestOpsMatchReference|TestHalfPlansMatchReference|TestHalfFusedBlocks|TestConvertAround|TestConv3D|TestPool3D|TestPoolLargeWindow|TestConvGPUPlan|TestConvCPUPlan|TestConvCPUPaddedCopy|TestConvDepthwiseCPUPlan|TestConvWindowCPUPlan|TestConv1x1CPUPlan|TestConv1x1PooledCPUPlan|TestConv1x1BlockedCPUPlan|TestCPULaunchGroups|TestInvertedResidualPlan|TestMaxPoolCPUPlan|TestConcatCPUPlan|TestGemmCPUPlan|TestGlobalConfig.*|TestCustom.*|TestSample.*|TestDiamond.*|TestLayerNormStatistics|TestRowGroupPlans|TestGoodKernel|TestYoloHead|TestSampleAgainstReference'
gotest -p 1 \
	-run "^($rest)\$" \
	./cl ./host ./builtin_kernels ./samples/custom_layers ./samples/custom_relu ./samples/onnx_custom_op ./samples/yolo_head 2>&1 | tee "$log" | grep --line-buffered -E '^(ok|FAIL|--- FAIL)'
# PIPESTATUS right after the pipeline: go test's own status (a "|| true" after the
# pipeline would replace it with true's, and a failing test would pass).
[ "${PIPESTATUS[0]}" = 0 ] || status=1
wait "$netpid" || status=1
wait "$slowpid" || status=1
grep -E '^(ok|FAIL|--- FAIL)' "$log3" | sed 's/$/ (the slowest kernel tests)/'
grep -E '^(ok|FAIL|--- FAIL)' "$log2" | sed 's/$/ (network tests, optimized builds)/'
cat "$log2" "$log3" >>"$log"
# Every name the lists hold must have run: a renamed test would drop out silently.
for name in $(tr '|' '\n' <<<"$slow|$rest|$networks" | sed 's/\.\*$//'); do
	if ! grep -q "^=== RUN   $name" "$log"; then
		echo "check-kernels: no test matches $name (renamed? update the lists)" >&2
		status=1
	fi
done
# Each oclgrind report names its kernel on one of the next lines; the canary's are
# expected, any other kernel's fail the run.
problems='Invalid (read|write)|[Dd]ata race|exceeds static array size|FATAL ERROR'
reports=$(grep -E -A3 "$problems" "$log" | grep -E '^\s*Kernel: ' || true)
canary=$(grep -c 'Kernel: canary_overrun' <<<"$reports" || true)
others=$(grep -v 'Kernel: canary_overrun' <<<"$reports" | grep -c 'Kernel: ' || true)
fatal=$(grep -c 'FATAL ERROR' "$log" || true)
if [ "$canary" = 0 ]; then
	echo "check-kernels: the canary's out-of-bounds read was not reported: oclgrind's reports do not reach the log" >&2
	status=1
fi
if [ "$others" != 0 ] || [ "$fatal" != 0 ]; then
	echo "oclgrind reported problems in $others places ($fatal fatal):" >&2
	# Each report with the six lines after it, the canary's left out.
	awk -v re="$problems" '$0 ~ re { if (blk !~ /canary_overrun/) printf "%s", blk; blk = ""; n = 7 }
		n > 0 { blk = blk $0 "\n"; n-- } END { if (blk !~ /canary_overrun/) printf "%s", blk }' "$log" | head -80 >&2
	status=1
fi
if [ $status != 0 ] && grep -q -- '--- FAIL' "$log"; then
	grep -E -A15 -- '--- FAIL' "$log" | head -80 >&2
fi
echo "check-kernels: $(( $(date +%s) - start )) s, canary reported, $others other reports, status $status"
exit $status
