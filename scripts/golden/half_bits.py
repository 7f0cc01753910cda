# Reference bit patterns for float16/bfloat16 rounding (tests/half-dtype.test.ts).
# Run: python3 scripts/golden/half_bits.py > tests/golden-kiln/half-bits.json  (PyTorch 1.13)
import json, struct, torch

def f32(bits):
    return struct.unpack('<f', struct.pack('<I', bits))[0]

values = [0.0, -0.0, 1.0, -1.0, 0.1, 1/3, 65504.0, 65519.0, 65520.0, 70000.0, -1e9,
          2.0**-14, 2.0**-24, 2.0**-25, 2.0**-25 * 1.0000001, 3 * 2.0**-25, 6e-8, 1e-8,
          1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 1.0 + 2.0**-11 + 2.0**-20, 2049.0, 2051.0,
          3.140625, 1e-40, 3.4e38, float('inf'), float('-inf'), float('nan'),
          1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, f32(0x3f808000), f32(0x3f818000), f32(0x7f7fffff)]
x = torch.tensor(values, dtype=torch.float32)
half = x.half().view(torch.int16).to(torch.int32).bitwise_and(0xffff).tolist()
bf = x.bfloat16().view(torch.int16).to(torch.int32).bitwise_and(0xffff).tolist()
enc = lambda v: v if v == v and abs(v) != float('inf') else str(v)
print(json.dumps({'torch': torch.__version__,
                  'values': [enc(float(v)) for v in x.tolist()],
                  'float16': half, 'bfloat16': bf}, indent=1))
