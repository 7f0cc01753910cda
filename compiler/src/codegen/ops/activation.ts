// WGSL templates of the primitive entries of ir-spec's 'activation' family (ir-spec/src/ops/
// activation.ts): erf, sigmoid, tanh. Composite entries there (hardswish, …) are compiled from
// their formulas and have no template.

import { unaryF, type Template } from './template.js';

const ERF = `fn k_erf(x: f32) -> f32 {
  let a = abs(x);
  if (a < 1.0) {
    // Maclaurin series: relative accuracy near 0, where the rational fit is poor.
    let x2 = x * x;
    var term = x;
    var sum = x;
    for (var n = 1; n < 14; n++) {
      let fn_ = f32(n);
      term = -term * x2 / fn_;
      sum += term / (2.0 * fn_ + 1.0);
    }
    return sum * 1.1283791670955126;
  }
  // Abramowitz-Stegun 7.1.26 for the tail (absolute error 1.5e-7 on values >= 0.84).
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return select(-y, y, x >= 0.0);
}`;

const TANH = `fn k_tanh(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.3) {
    let x2 = x * x;
    return x * (1.0 + x2 * (-0.3333333333 + x2 * (0.1333333333 + x2 * (-0.0539682540 + x2 * 0.0218694885))));
  }
  let e = exp(-2.0 * min(a, 20.0));
  return sign(x) * (1.0 - e) / (1.0 + e);
}`;

const SIGMOID = `fn k_sigmoid(x: f32) -> f32 {
  if (x >= 0.0) { return 1.0 / (1.0 + exp(-x)); }
  let e = exp(x);
  return e / (1.0 + e);
}`;

export const TEMPLATES: Readonly<Record<string, Template>> = {
  erf: unaryF((x) => `k_erf(${x})`, ERF),
  sigmoid: unaryF((x) => `k_sigmoid(${x})`, SIGMOID),
  tanh: unaryF((x) => `k_tanh(${x})`, TANH),
};
