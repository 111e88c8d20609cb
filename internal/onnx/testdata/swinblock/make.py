# Makes swinblock.onnx: one shifted-window block of torchvision's Swin Transformer (dim 8,
# 2 heads, 4x4 windows shifted by 2) on a 1x6x6x8 input, which it pads to 8x8. Its export
# holds the load-time subgraphs of windowed attention: the attention mask built by
# ConstantOfShape and ScatterND, window and shift arithmetic on Shape (integer Div, Mod,
# Range, Where, Equal, Expand), the roll as Slice and Concat, and a Dropout of p=0 written
# with training_mode true. x.npy is the input, y.npy PyTorch's output.
# Run with torch 1.13 / torchvision 0.14: python3 make.py
import numpy as np
import torch
from torchvision.models.swin_transformer import SwinTransformerBlock

torch.manual_seed(57)
block = SwinTransformerBlock(dim=8, num_heads=2, window_size=[4, 4], shift_size=[2, 2]).eval()
x = torch.randn(1, 6, 6, 8)
with torch.no_grad():
    y = block(x)
torch.onnx.export(block, x, "swinblock.onnx", opset_version=14, input_names=["x"], output_names=["y"])
np.save("x.npy", x.numpy())
np.save("y.npy", y.numpy())
