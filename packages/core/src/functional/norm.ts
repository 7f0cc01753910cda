// F: the 'norm' functional forms (to be written).
export {};
