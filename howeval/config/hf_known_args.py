"""Keyword arguments of transformers' ``from_pretrained`` (``PreTrainedModel`` and the ``AutoModel*`` classes) in
transformers 5.20.2 (the pin of constraints/cpu.txt and gpu.txt; 5.24.0 has the same set), recorded so that a config is checked at load without importing transformers (seconds).

The ``hf`` engine's options pass these through (``howeval.config.engines.HFOptions``); a key that is none of
them is an error with the closest name. ``tests/cpu/engines/test_hf_options.py`` checks the list against the
installed transformers (``howeval.engines.hf.from_pretrained_arg_names``); regenerate it from there when
transformers is upgraded.
"""
RECORDED_VERSION = "5.20.2"

NOT_FROM_YAML = frozenset({"config", "state_dict", "generation_config", "tqdm_class", "device_mesh",
                           "output_loading_info"})
"""``from_pretrained`` arguments a YAML config cannot give: Python objects, or one that changes what
``from_pretrained`` returns (``output_loading_info``)."""

FROM_PRETRAINED_ARGS = frozenset("""
adapter_kwargs adapter_name allow_all_kernels attn_implementation cache_dir code_revision device_map
disable_mmap distributed_config dtype experts_implementation force_download fusion_config gguf_file
ignore_mismatched_sizes kernel_config key_mapping local_files_only max_memory offload_buffers offload_folder
proxies quantization_config revision subfolder token torch_dtype tp_plan tp_size trust_remote_code
use_kernels use_safetensors variant weights_only
""".split())
"""``from_pretrained`` keyword arguments a config may give (named parameters and the ``kwargs.pop`` names of
``PreTrainedModel.from_pretrained`` and ``_BaseAutoModelClass.from_pretrained``, minus :data:`NOT_FROM_YAML`)."""

LOADER_SHARED_ARGS = ("trust_remote_code", "revision", "code_revision", "cache_dir", "local_files_only", "token",
                      "subfolder")
"""Arguments that also go to the processor's / tokenizer's ``from_pretrained`` (same repository, same code)."""
