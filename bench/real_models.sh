#!/bin/bash
# Real models on one machine: exports them (bench/models/real_models.py, needs torch,
# torchvision, onnxruntime), then runs each with clhost on the GPU and on PoCL from empty
# caches, compares with the fp32 reference (ONNX Runtime's, compare.py, 1e-4) and prints clhost bench p50.
#   CLHOST=bin/clhost OUT=/tmp/real-out [ONLY="vit_b_16"] [DEVS="gpu cpu"] bench/real_models.sh
set -u
[ -d /etc/OpenCL/vendors ] || echo "no /etc/OpenCL/vendors: register the GPU driver's ICD first" >&2
C=${CLHOST:-$PWD/bin/clhost}
OUT=${OUT:-$(mktemp -d)}
m=/tmp/real
export PYTHONUNBUFFERED=1
python3 bench/models/real_models.py $m --batch 1 8 ${ONLY:+--only $ONLY} > $OUT/export.log 2>&1 || tail -5 $OUT/export.log
cat $m/peers.jsonl
for f in $m/*.onnx; do
	s=${f%.onnx}; n=$(basename $s)
	for dev in ${DEVS:-gpu cpu}; do
		d=$(mktemp -d)
		t0=$EPOCHREALTIME
		POCL_CACHE_DIR=$d/pocl XDG_CACHE_HOME=$d/xdg timeout 300 $C run -m $f -i $s.in.npy -o $d/out -d $dev --quiet > $d/log 2>&1
		rc=$?
		t1=$EPOCHREALTIME
		r=$(python3 bench/models/compare.py $s.ref.npy $d/out/output.npy 2>&1 | tail -1)
		p=
		if [ $rc = 0 ]; then
			POCL_CACHE_DIR=$d/pocl XDG_CACHE_HOME=$d/xdg timeout 200 $C bench -m $f -d $dev --json --layers=false -n ${RUNS:-20} --warmup 3 --first-run=false > $d/b.json 2>/dev/null
			p=$(python3 -c "import json;print(json.load(open('$d/b.json'))['p50_ms'])" 2>/dev/null)
		fi
		printf '%s\t%s\trc=%s\tfirst=%.1fs\tp50=%s\t%s\n' $n $dev $rc $(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}') "$p" "$r"
		[ $rc = 0 ] || tail -3 $d/log | cut -c1-300
	done
done
