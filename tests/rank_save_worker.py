"""One rank of tests/cpu/engines/test_checkpoints.py's two-process save check (gloo, CPU): a module of its own so
that ``torch.multiprocessing.spawn`` can import it. Each rank saves a tiny random Llama twice into folders of its
own, once with ``save_pretrained`` and once with :func:`howeval.engines.checkpoints.save_model_here`."""
from __future__ import annotations


def worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    import torch.distributed as dist
    from pcgrad_ddp import exit_without_finalizing
    from transformers import LlamaConfig, LlamaForCausalLM

    from howeval.engines.checkpoints import save_model_here

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        cfg = LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=1)
        model = LlamaForCausalLM(cfg)
        model.save_pretrained(f"{out_dir}/plain-{rank}")
        save_model_here(model, f"{out_dir}/here-{rank}")
        dist.barrier()
    finally:
        dist.destroy_process_group()
    exit_without_finalizing()
