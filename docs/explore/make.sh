#!/usr/bin/env bash
# The explorer gallery: `bash docs/explore/make.sh` rewrites the three example pages.
set -euo pipefail
cd "$(dirname "$0")"
deplo explore -c 'torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))' --check -o rmsnorm.html
deplo explore -c 'torch.matmul(torch.randn(256,512,dtype=torch.bfloat16), torch.randn(512,384,dtype=torch.bfloat16))' \
  --check -o matmul-bf16.html
deplo explore TinyLlama/TinyLlama-1.1B-Chat-v1.0 --layer 0 -o tinyllama-layer0.html
