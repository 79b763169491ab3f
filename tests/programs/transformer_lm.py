"""A small language model with nn.Transformer (encoder over a context, decoder over the next
tokens under the square subsequent mask), trained on a synthetic corpus with a learnable
structure; Adam, gradient clipping, a positional encoding buffer."""
import argparse
import json
import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0)])


class Seq2SeqLM(nn.Module):
    def __init__(self, ntoken, d_model=32, nhead=4, nlayers=2, dim_ff=64, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(ntoken, d_model)
        self.pos = PositionalEncoding(d_model, dropout)
        self.transformer = nn.Transformer(d_model=d_model, nhead=nhead,
                                          num_encoder_layers=nlayers,
                                          num_decoder_layers=nlayers,
                                          dim_feedforward=dim_ff, dropout=dropout)
        self.head = nn.Linear(d_model, ntoken)
        self.d_model = d_model

    def forward(self, src, tgt):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(0))
        s = self.pos(self.embed(src) * math.sqrt(self.d_model))
        t = self.pos(self.embed(tgt) * math.sqrt(self.d_model))
        return self.head(self.transformer(s, t, tgt_mask=tgt_mask))


def corpus(n, ntoken, generator):
    """Token i+1 follows token i (mod ntoken) three times in four: a learnable LM."""
    out = torch.empty(n, dtype=torch.long)
    out[0] = 0
    jumps = torch.randint(0, ntoken, (n,), generator=generator)
    keep = torch.rand(n, generator=generator) < 0.75
    for i in range(1, n):
        out[i] = (out[i - 1] + 1) % ntoken if keep[i] else jumps[i]
    return out


def batches(data, ctx, tgt_len, bsz, generator):
    starts = torch.randint(0, len(data) - ctx - tgt_len - 1, (bsz,), generator=generator)
    src = torch.stack([data[s: s + ctx] for s in starts.tolist()], dim=1)
    seq = torch.stack([data[s + ctx - 1: s + ctx + tgt_len] for s in starts.tolist()], dim=1)
    return src, seq[:-1], seq[1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--log-every", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    ntoken = 12
    data = corpus(4000, ntoken, g)
    model = Seq2SeqLM(ntoken)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses, window = [], []
    model.train()
    for step in range(1, args.steps + 1):
        src, tgt_in, tgt_out = batches(data, 16, 8, 16, g)
        optimizer.zero_grad()
        logits = model(src, tgt_in)
        loss = criterion(logits.view(-1, ntoken), tgt_out.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        window.append(loss.item())
        if step % args.log_every == 0:
            losses.append(sum(window) / len(window))
            window = []
    print("RESULT " + json.dumps({"losses": losses}))


if __name__ == "__main__":
    main()
