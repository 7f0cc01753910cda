// F: the 'conv' functional forms (to be written).
export {};
