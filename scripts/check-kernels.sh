#!/usr/bin/env bash
# Runs every built-in kernel (builtin_kernels' test matrix), every kernel of configs/ and
# of samples/ (the host's end-to-end tests) under oclgrind, the OpenCL simulator, and fails
# on any invalid memory access, uninitialised value or data race it reports.
#
# The tests select oclgrind's device through CLHOST_TEST_DEVICE; the OpenCL loader is
# pointed at oclgrind's ICD alone, so nothing runs on another device by mistake.
set -uo pipefail
cd "$(dirname "$0")/.."
icd=/usr/lib/oclgrind/liboclgrind-rt-icd.so
[ -f "$icd" ] || { echo "oclgrind is not installed (apt-get install oclgrind)" >&2; exit 1; }
vendors=$(mktemp -d)
trap 'rm -rf "$vendors"' EXIT
echo "$icd" > "$vendors/oclgrind.icd"
log=$(mktemp)
export OCL_ICD_VENDORS="$vendors" CLHOST_TEST_DEVICE=oclgrind
# OCLGRIND_UNINITIALIZED is left off: its plugin aborts on instructions oclgrind's own
# compiler emits. Unwritten outputs are caught instead by the NaN pre-fill of the tests.
export OCLGRIND_CHECK_API=1 OCLGRIND_DATA_RACES=1
start=$(date +%s)
status=0
go test -count=1 -parallel 1 -p 2 -timeout 60m \
	-run 'TestOpsMatchReference|TestConvGPUPlan|TestGemmTilesAllCorrect|TestConvCPUPlan|TestConvCPUPaddedCopy|TestConvDepthwiseCPUPlan|TestConvWindowCPUPlan|TestConv1x1CPUPlan|TestConv1x1PooledCPUPlan|TestConv1x1BlockedCPUPlan|TestConvMaxPoolCPUPlan|TestCPULaunchGroups|TestInvertedResidualPlan|TestRollingClaims|TestConvWinogradCPUPlan|TestMaxPoolCPUPlan|TestConcatCPUPlan|TestGemmCPUPlan|TestGlobalConfig|TestCustom|TestSample|TestDiamond|TestSplitBatchMatchesWhole|TestBorrowedInput|TestFirePlan|TestFireModules|TestLayerNormStatistics' \
	./builtin_kernels ./host 2>&1 | tee "$log" | grep -E '^(ok|FAIL|---)'
# PIPESTATUS right after the pipeline: go test's own status (a "|| true" after the
# pipeline would replace it with true's, and a failing test would pass).
[ "${PIPESTATUS[0]}" = 0 ] || status=1
problems='Invalid (read|write)|[Dd]ata race|exceeds static array size|FATAL ERROR'
if grep -E "$problems" "$log" >/dev/null; then
	echo "oclgrind reported problems:" >&2
	grep -E -B2 -A8 "$problems" "$log" | head -80 >&2
	status=1
fi
echo "check-kernels: $(( $(date +%s) - start )) s, status $status"
exit $status
