// F: the 'activation' functional forms (to be written).
export {};
