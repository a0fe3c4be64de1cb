# Verify and measure the Canon backward rewrite (tree = new kernel; .gpu/old = main's), then GDN vs GLA vs Llama.
# The script as run on the device (2026-11-24). Paths outside the repository: .gpu/setup.sh installed
# the carried wheels into /tmp/site (docs: the device tool's README); .gpu/old/ held the kernel before
# the rewrite, i.e. `git show 24611d2:playground/kernels/canon_triton.py` and `…/__init__.py`.
source .gpu/setup.sh || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
V=/tmp/verify; mkdir -p $V; rm -rf /tmp/vtree; cp -r . /tmp/vtree; cd /tmp/vtree   # own copy: a later run call re-syncs the tree
nvidia-smi --query-gpu=name --format=csv,noheader > $V/gpu.txt
MINI="task=depo1 task.K=4 task.N=25 task.context=512 size=8L512D train=paper train.batch_size=64 train.compile=true"
timeout 300 python3 -m pytest -q -m gpu tests/test_gpu.py tests/test_kernels.py -k canon -p no:cacheprovider > $V/gpu_tests.txt 2>&1
echo "tests rc $?" >> $V/gpu_tests.txt
python3 -m playground.bench.cli canon json=$V/canon_new.json > $V/canon_new.txt 2>&1
python3 -m playground.bench.cli train $MINI compare='canon=none | canon=ABCD' json=$V/train_new.json > $V/train_new.txt 2>&1
cp playground/kernels/canon_triton.py playground/kernels/__init__.py $V/ 2>/dev/null
cp .gpu/old/canon_triton.py .gpu/old/__init__.py playground/kernels/
python3 -m playground.bench.cli canon json=$V/canon_old.json > $V/canon_old.txt 2>&1
python3 -m playground.bench.cli train $MINI compare='canon=none | canon=ABCD' json=$V/train_old.json > $V/train_old.txt 2>&1
cp $V/canon_triton.py $V/__init__.py playground/kernels/
python3 -m playground.bench.cli train task=depo1 size=12L768D train.batch_size=16 \
  compare='mixer=rope train.compile=true | mixer=gla canon=none | mixer=gdn canon=none | mixer=gdn canon=ABCD' json=$V/gdn_compare.json > $V/gdn_compare.txt 2>&1
echo ALLDONE > $V/done
