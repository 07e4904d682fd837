"""The FLOP counts of the neural stages, by hand and against torch's own counter, and the peak's bookkeeping.

Nothing here is timed: the peak's value depends on the machine and its load, so only what it records is checked.
"""
from __future__ import annotations

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from ragcourse.engines.peak import (Peak, arithmetic, decode_contexts, decode_flops, encoder_flops, measure_peak,
                                    prefill_flops, stage_line)


def tiny_bert(labels: int = 0, attention: str = "eager") -> transformers.BertConfig:
    config = transformers.BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=16, max_position_embeddings=32,
                                     **({"num_labels": labels, "id2label": {i: str(i) for i in range(labels)}}
                                        if labels else {}))
    config._attn_implementation = attention
    return config


def tiny_llama(attention: str = "eager") -> transformers.LlamaConfig:
    config = transformers.LlamaConfig(vocab_size=10, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, head_dim=4,
                                      tie_word_embeddings=True, max_position_embeddings=64)
    config._attn_implementation = attention
    return config


def test_an_encoder_counted_by_hand():
    # one layer's weights: q, k, v, o 8x8 each, feed-forward 8x16 and 16x8: 4*64 + 2*128 = 512
    # a sequence of 3 tokens: 2 FLOPs x 3 tokens x 2 layers x 512 = 6,144; attention 4 x 3 x 3 x 8 x 2 layers = 576;
    # the pooler 2 x 8 x 8 = 128; a classifier of one output 2 x 8 = 16
    assert arithmetic(tiny_bert()).layer_weights == 512
    assert encoder_flops(tiny_bert(), [3]) == 6144 + 576 + 128
    assert encoder_flops(tiny_bert(), [3], pooler=False) == 6144 + 576
    assert encoder_flops(tiny_bert(), [3], labels=1) == 6144 + 576 + 128 + 16
    assert encoder_flops(tiny_bert(), [3, 3, 1]) == 2 * (6144 + 576 + 128) + (2048 + 4 * 8 * 2 + 128)


def test_a_decoder_counted_by_hand():
    # one layer: q and o 8x(2 heads x 4), k and v 8x(1 kv head x 4), gated feed-forward 3 x 8x16: 128 + 64 + 384 = 576;
    # the tied output head 8 x 10 vocabulary = 80 weights
    cost = arithmetic(tiny_llama())
    assert (cost.layer_weights, cost.head_weights, cost.attention_width) == (576, 80, 8)
    # a 5-token prompt: 2 x 5 x 576 = 5,760; attention 4 x 5 x 5 x 8 = 800; logits of the last token 2 x 80 = 160
    assert prefill_flops(tiny_llama(), [5]) == 5760 + 800 + 160
    assert prefill_flops(tiny_llama(), [5], logits=5) == 5760 + 800 + 5 * 160
    # two decoding steps after it: contexts 6 and 7, each 2 x 576 + 4 x context x 8 + 160
    assert decode_contexts(1, 5, 2) == [6, 7]
    assert decode_flops(tiny_llama(), [6, 7]) == (1152 + 192 + 160) + (1152 + 224 + 160)
    assert decode_contexts(2, 5, 2) == [6, 6, 7, 7]


def counted_by_torch(model, **inputs) -> dict[str, int]:
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(**inputs)
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}


@pytest.mark.parametrize("labels", [0, 1], ids=["sentence encoder", "cross-encoder"])
def test_the_encoder_count_agrees_with_torch(labels):
    """torch counts every matrix product of the same architecture; with eager attention the two agree exactly."""
    torch.manual_seed(0)
    config = tiny_bert(labels)
    model = (transformers.BertForSequenceClassification if labels else transformers.BertModel)(config).eval()
    ids = torch.randint(0, 50, (3, 7))
    counted = counted_by_torch(model, input_ids=ids)
    assert sum(counted.values()) == encoder_flops(config, [7, 7, 7], labels=labels)
    assert counted["aten.bmm"] == 3 * 4 * 2 * 7 * 7 * 8   # the attention's two products, 2 layers, 3 sequences


def test_with_sdpa_torch_misses_the_attention_on_the_cpu():
    """The CPU's fused attention (``_scaled_dot_product_flash_attention_for_cpu``) has no formula in torch's
    counter: it counts the linear layers only, so the difference is exactly our attention term."""
    torch.manual_seed(0)
    model = transformers.BertModel(tiny_bert(attention="sdpa")).eval()
    counted = counted_by_torch(model, input_ids=torch.randint(0, 50, (2, 5)))
    assert encoder_flops(tiny_bert(), [5, 5]) - sum(counted.values()) == 2 * 4 * 2 * 5 * 5 * 8


def test_prefill_and_decode_agree_with_torch():
    torch.manual_seed(0)
    config = tiny_llama()
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 10, (2, 6))
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    assert counter.get_total_flops() == prefill_flops(config, [6, 6])
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        for _ in range(3):
            out = model(input_ids=out.logits[:, -1].argmax(-1)[:, None], cache=out.cache, use_cache=True)
    assert counter.get_total_flops() == decode_flops(config, decode_contexts(2, 6, 3))


def test_the_peak_records_what_it_measured_and_is_measured_once():
    before = torch.get_num_threads()
    peak = measure_peak(threads=1, size=64, repeats=2)
    assert (peak.threads, peak.size, peak.repeats) == (1, 64, 2)
    assert peak.gflops == pytest.approx(2 * 64 ** 3 / peak.best_seconds / 1e9)
    assert not peak.cpu_gflops <= 0   # a rate, or nan where the clock's tick is coarser than a product
    assert measure_peak(threads=1, size=64, repeats=2) is peak
    assert torch.get_num_threads() == before
    assert measure_peak(size=64, repeats=2).threads == before


def test_the_line_of_a_stage():
    peak = Peak(80.2, 1, 1536, 0.09, 5)
    assert stage_line("encoder", 2468, 2.0, 50.2e9, peak) == (
        "encoder: 1,234 tokens/s, 25.1 GFLOP/s = 31% of this machine's measured fp32 peak (80.2 GFLOP/s, 1 thread)")
    assert stage_line("decode", 10, 1.0, 160.4e9, Peak(80.2, 2, 1536, 0.09, 5)).endswith(
        "= 200% of this machine's measured fp32 peak (80.2 GFLOP/s, 2 threads)")
    assert stage_line("encoder", 2468, 2.0, 50.2e9, Peak(80.2, 1, 1536, 0.09, 5, 129.0), cpu_seconds=0.5).endswith(
        "(80.2 GFLOP/s, 1 thread); per CPU second 100.4 GFLOP = 78% of the peak's 129.0")


@pytest.mark.parametrize("call, name", [
    (lambda: measure_peak(threads=0), "threads"),
    (lambda: measure_peak(size=8), "size"),
    (lambda: measure_peak(repeats=0), "repeats"),
    (lambda: encoder_flops(tiny_bert(), [3, 0]), "lengths"),
    (lambda: encoder_flops(tiny_llama(), [3]), "encoder_flops"),
    (lambda: prefill_flops(tiny_bert(), [3]), "prefill_flops|decoder"),
    (lambda: prefill_flops(tiny_llama(), [3], logits=4), "logits"),
    (lambda: decode_contexts(0, 5, 2), "rows"),
    (lambda: arithmetic(transformers.GPT2Config()), "model_type"),
    (lambda: arithmetic(tiny_bert(), labels=-1), "labels"),
    (lambda: stage_line("x", 1, 0.0, 1.0, Peak(1.0, 1, 16, 1.0, 1)), "seconds"),
    (lambda: stage_line("x", 1, 1.0, 1.0, Peak(1.0, 1, 16, 1.0, 1), cpu_seconds=0.0), "cpu_seconds"),
], ids=["threads", "size", "repeats", "length", "decoder as encoder", "encoder as decoder", "logits", "rows",
        "architecture", "labels", "seconds", "CPU seconds"])
def test_a_wrong_argument_names_itself(call, name):
    with pytest.raises(ValueError, match=name):
        call()
