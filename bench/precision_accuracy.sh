#!/bin/bash
# Accuracy of each precision against the fp32 reference: exports the real models
# (bench/models/real_models.py: ONNX Runtime's output where it is installed, else PyTorch's
# on the CPU), runs each with clhost at every precision on one device and prints
# compare.py's max relative error and arg-max agreement.
#   CLHOST=bin/clhost DEV=cpu [ONLY="resnet18 vit_b_16"] [PRECISIONS="fp32 fp16"] bench/precision_accuracy.sh
set -u
C=${CLHOST:-$PWD/bin/clhost}
m=${MODELS:-/tmp/real}
export PYTHONUNBUFFERED=1
if [ -z "${NOEXPORT:-}" ]; then
	python3 bench/models/real_models.py $m --batch 1 --runs 1 ${ONLY:+--only $ONLY} > $m.export.log 2>&1 || { tail -5 $m.export.log; exit 1; }
fi
for f in $m/*_b1.onnx; do
	s=${f%.onnx}; n=$(basename $s)
	if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" ${n%_b1} "* ]]; then continue; fi
	for p in ${PRECISIONS:-fp32 tf32 fp16}; do
		d=$(mktemp -d)
		if timeout ${TIMEOUT:-900} $C run -m $f -i $s.in.npy -o $d/out -d ${DEV:-cpu} --precision $p --quiet > $d/log 2>&1; then
			r=$(python3 bench/models/compare.py $s.ref.npy $d/out/output.npy --tol 1 2>&1 | tail -1)
		else
			r="failed: $(tail -1 $d/log | cut -c1-200)"
		fi
		printf '%s\t%s\t%s\t%s\n' "$n" "${DEV:-cpu}" "$p" "$r"
		rm -rf $d
	done
done
