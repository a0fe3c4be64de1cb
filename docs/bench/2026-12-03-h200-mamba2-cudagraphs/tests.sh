# A second device call (a fresh machine, kind nvidia-h200, carry .whl): the CUDA-graph training test as changed
# (reduce-overhead against default, within eager's distance), for llama, gla and mamba2.
export PYTHONUNBUFFERED=1 WANDB_MODE=disabled
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
timeout 280 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_mixers_gpu.py -k cuda_graphs -rA > $OUT/gpu_tests.txt 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.txt
