// F: the 'loss' functional forms (to be written).
export {};
