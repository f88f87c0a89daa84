"""`transformers.pipeline(..., device="vk")`: the model lands on vk and the pipeline's output
equals the same pipeline on the CPU (text generation with a left-padding tokenizer, fill-mask,
feature extraction, text classification)."""
import pytest
import torch

from tiny import ARCHS, VOCAB, word_tokenizer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _pipelines(task, model_factory, **kwargs):
    from transformers import pipeline

    torch.manual_seed(0)
    model = model_factory().eval()
    tokenizer = word_tokenizer(padding_side="left")
    cpu = pipeline(task, model=model, tokenizer=tokenizer, device="cpu", **kwargs)
    torch.manual_seed(0)
    dev = pipeline(task, model=model_factory().eval(), tokenizer=tokenizer, device="vk", **kwargs)
    assert dev.device.type == "vk" and next(dev.model.parameters()).device.type == "vk"
    return cpu, dev


def test_text_generation():
    cpu, dev = _pipelines("text-generation", ARCHS["llama_gqa"].build)
    prompts = ["the red cat", "one big old dog sees a bird near the river"]
    kwargs = dict(max_new_tokens=8, do_sample=False, pad_token_id=0, batch_size=2)
    expected = cpu(prompts, **kwargs)
    got = dev(prompts, **kwargs)
    assert got == expected
    assert all(len(r[0]["generated_text"]) > len(p) for r, p in zip(got, prompts))


def test_fill_mask():
    from transformers import BertConfig, BertForMaskedLM

    def bert():
        return BertForMaskedLM(BertConfig(
            vocab_size=VOCAB + 1, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=48, max_position_embeddings=32, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, initializer_range=0.3))

    from transformers import pipeline

    tokenizer = word_tokenizer()
    tokenizer.add_special_tokens({"mask_token": "<mask>"})
    torch.manual_seed(0)
    cpu = pipeline("fill-mask", model=bert().eval(), tokenizer=tokenizer, device="cpu")
    torch.manual_seed(0)
    dev = pipeline("fill-mask", model=bert().eval(), tokenizer=tokenizer, device="vk")
    text = "the <mask> cat sees a dog"
    expected, got = cpu(text, top_k=4), dev(text, top_k=4)
    assert [r["token"] for r in got] == [r["token"] for r in expected]
    torch.testing.assert_close(torch.tensor([r["score"] for r in got]),
                               torch.tensor([r["score"] for r in expected]), atol=1e-5, rtol=1e-4)


def test_feature_extraction_and_classification():
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    config = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=48, max_position_embeddings=32, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    cpu, dev = _pipelines("feature-extraction", lambda: BertModel(BertConfig(**config)))
    texts = ["a small fish", "the old house by the river"]
    for e, g in zip(cpu(texts, return_tensors=True), dev(texts, return_tensors=True)):
        torch.testing.assert_close(g.cpu(), e, atol=1e-5, rtol=1e-4)
    cpu, dev = _pipelines("text-classification", lambda: BertForSequenceClassification(
        BertConfig(num_labels=3, **config)))
    expected, got = cpu(texts, top_k=None), dev(texts, top_k=None)
    for e, g in zip(expected, got):
        assert [r["label"] for r in g] == [r["label"] for r in e]
        torch.testing.assert_close(torch.tensor([r["score"] for r in g]),
                                   torch.tensor([r["score"] for r in e]), atol=1e-5, rtol=1e-4)
