// F: the 'pool' functional forms (to be written).
export {};
