"""GPT-2 small generating text, batch 1, greedy, as people first try it: the model is built on the CPU,
moved to the GPU (its weights' one-time copy), then `generate()` decodes token by token. No steps are
marked: the loop is the library's, so tenprof must tell the set-up from the decode iterations itself.

    tenprof run examples/gpt2_generate.py --tokens 64

Random weights from transformers.GPT2Config() (no download); a 2-layer, 128-wide model on the CPU.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--prompt", type=int, default=16)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    config = GPT2Config() if cuda else GPT2Config(n_layer=2, n_embd=128, n_head=4)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config).eval().to(device)  # the weights' one-time copy to the GPU
    prompt = torch.randint(0, config.vocab_size, (1, args.prompt), device=device)
    with torch.no_grad():
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=args.tokens,
            min_new_tokens=args.tokens,
            do_sample=False,
            pad_token_id=0,
        )
    print(f"generated={out.shape[1] - args.prompt}")


if __name__ == "__main__":
    main()
