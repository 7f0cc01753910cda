# An independent NumPy (float32) implementation of train.mjs's recipe with PyTorch's semantics
# (default inits, BatchNorm with unbiased running variance and momentum 0.1, Dropout(0.25),
# first-max max pooling, mean cross-entropy, Adam) — no Kiln code involved. It exists to measure
# how much the recipe's test accuracy depends on the seed, as a reference for Kiln's numbers
# (examples/digits/README.md). Not run by the tests. Usage: python3 numpy-reference.py FIRST END
# prints "seed accuracy%" for seeds FIRST..END-1 (about 7 s per seed).
import numpy as np, sys, os
f32 = np.float32
D = np.loadtxt(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'digits.csv'), delimiter=',', skiprows=1, dtype=np.float32)
Y = D[:, 0].astype(np.int64); X = (D[:, 1:] / 16).astype(f32).reshape(-1, 1, 8, 8)
Xtr, Ytr, Xte, Yte = X[:1437], Y[:1437], X[1437:], Y[1437:]

def im2col(x):  # x [N,C,8,8] -> [N, C*9, 64]
    N, C, H, W = x.shape
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((N, C, 9, H * W), f32)
    for k in range(9):
        i, j = divmod(k, 3)
        cols[:, :, k, :] = p[:, :, i:i + H, j:j + W].reshape(N, C, H * W)
    return cols.reshape(N, C * 9, H * W)

def col2im(dcols, C):  # [N, C*9, 64] -> [N,C,8,8]
    N = dcols.shape[0]
    d = dcols.reshape(N, C, 9, 8, 8)
    p = np.zeros((N, C, 10, 10), f32)
    for k in range(9):
        i, j = divmod(k, 3)
        p[:, :, i:i + 8, j:j + 8] += d[:, :, k]
    return p[:, :, 1:9, 1:9]

def run(seed):
    rng = np.random.default_rng(seed)
    U = lambda shape, b: rng.uniform(-b, b, size=shape).astype(f32)
    P = {}
    P['w1'] = U((16, 9), 1 / 3); P['b1'] = U((16,), 1 / 3)
    P['g1'] = np.ones(16, f32); P['be1'] = np.zeros(16, f32)
    P['w2'] = U((32, 144), 1 / 12); P['b2'] = U((32,), 1 / 12)
    P['g2'] = np.ones(32, f32); P['be2'] = np.zeros(32, f32)
    P['w3'] = U((64, 512), 512 ** -0.5); P['b3'] = U((64,), 512 ** -0.5)
    P['w4'] = U((10, 64), 1 / 8); P['b4'] = U((10,), 1 / 8)
    R = {'m1': np.zeros(16, f32), 'v1': np.ones(16, f32), 'm2': np.zeros(32, f32), 'v2': np.ones(32, f32)}
    M = {k: np.zeros_like(v) for k, v in P.items()}; V = {k: np.zeros_like(v) for k, v in P.items()}
    t = 0

    def bn_fwd(x, g, b, rm, rv, train):
        if train:
            mu = x.mean((0, 2)); var = x.var((0, 2))
            n = x.shape[0] * x.shape[2]
            rm *= f32(0.9); rm += f32(0.1) * mu
            rv *= f32(0.9); rv += f32(0.1) * var * f32(n / (n - 1))
        else:
            mu, var = rm, rv
        inv = (1 / np.sqrt(var + f32(1e-5))).astype(f32)
        xh = (x - mu[None, :, None]) * inv[None, :, None]
        return xh * g[None, :, None] + b[None, :, None], (xh, inv)

    def bn_bwd(dy, cache, g):
        xh, inv = cache
        n = dy.shape[0] * dy.shape[2]
        dg = (dy * xh).sum((0, 2)); db = dy.sum((0, 2))
        dxh = dy * g[None, :, None]
        dx = inv[None, :, None] / n * (n * dxh - dxh.sum((0, 2))[None, :, None] - xh * (dxh * xh).sum((0, 2))[None, :, None])
        return dx.astype(f32), dg, db

    def forward(x, train):
        N = x.shape[0]
        c1 = im2col(x); z1 = np.einsum('ok,nkp->nop', P['w1'], c1) + P['b1'][None, :, None]
        a1, bc1 = bn_fwd(z1, P['g1'], P['be1'], R['m1'], R['v1'], train); r1 = np.maximum(a1, 0)
        c2 = im2col(r1.reshape(N, 16, 8, 8)); z2 = np.einsum('ok,nkp->nop', P['w2'], c2) + P['b2'][None, :, None]
        a2, bc2 = bn_fwd(z2, P['g2'], P['be2'], R['m2'], R['v2'], train); r2 = np.maximum(a2, 0)
        win = r2.reshape(N, 32, 4, 2, 4, 2).transpose(0, 1, 2, 4, 3, 5).reshape(N, 32, 4, 4, 4)
        idx = win.argmax(-1); pooled = np.take_along_axis(win, idx[..., None], -1)[..., 0]
        h = pooled.reshape(N, 512)
        mask = ((rng.random(h.shape) >= 0.25) / f32(0.75)).astype(f32) if train else None
        hd = h * mask if train else h
        z3 = hd @ P['w3'].T + P['b3']; r3 = np.maximum(z3, 0)
        out = r3 @ P['w4'].T + P['b4']
        return out, (c1, z1, a1, bc1, c2, z2, a2, bc2, idx, hd, mask, z3, r3)

    def backward(dout, cache, N):
        c1, z1, a1, bc1, c2, z2, a2, bc2, idx, hd, mask, z3, r3 = cache
        G = {}
        G['w4'] = dout.T @ r3; G['b4'] = dout.sum(0)
        dr3 = dout @ P['w4']; dz3 = dr3 * (z3 > 0)
        G['w3'] = dz3.T @ hd; G['b3'] = dz3.sum(0)
        dh = (dz3 @ P['w3']) * mask
        dp = dh.reshape(N, 32, 4, 4)
        dwin = np.zeros((N, 32, 4, 4, 4), f32); np.put_along_axis(dwin, idx[..., None], dp[..., None], -1)
        dr2 = dwin.reshape(N, 32, 4, 4, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(N, 32, 64)
        da2 = dr2 * (a2 > 0)
        dz2, G['g2'], G['be2'] = bn_bwd(da2, bc2, P['g2'])
        G['w2'] = np.einsum('nop,nkp->ok', dz2, c2); G['b2'] = dz2.sum((0, 2))
        dr1 = col2im(np.einsum('ok,nop->nkp', P['w2'], dz2), 16).reshape(N, 16, 64)
        da1 = dr1 * (a1 > 0)
        dz1, G['g1'], G['be1'] = bn_bwd(da1, bc1, P['g1'])
        G['w1'] = np.einsum('nop,nkp->ok', dz1, c1); G['b1'] = dz1.sum((0, 2))
        return G

    for epoch in range(15):
        perm = rng.permutation(1437)
        for b in range(0, 1437, 32):
            ids = perm[b:b + 32]; x, y = Xtr[ids], Ytr[ids]; N = len(ids)
            out, cache = forward(x, True)
            z = out - out.max(1, keepdims=True); p = np.exp(z); p /= p.sum(1, keepdims=True)
            dout = p.copy(); dout[np.arange(N), y] -= 1; dout /= N
            G = backward(dout.astype(f32), cache, N)
            t += 1
            for k in P:
                g = G[k].astype(f32)
                M[k] = f32(0.9) * M[k] + f32(0.1) * g
                V[k] = f32(0.999) * V[k] + f32(0.001) * g * g
                P[k] -= (f32(1e-3 / (1 - 0.9 ** t)) * M[k] / (np.sqrt(V[k]) / f32(np.sqrt(1 - 0.999 ** t)) + f32(1e-8))).astype(f32)
    out, _ = forward(Xte, False)
    return (out.argmax(1) == Yte).mean()

for s in range(int(sys.argv[1]), int(sys.argv[2])):
    print(s, round(float(run(s)) * 100, 2), flush=True)
