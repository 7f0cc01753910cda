// F: the 'embedding' functional forms (to be written).
export {};
