import { customAlphabet } from 'nanoid';

/** 32 lowercase hex characters = 128 random bits. */
export const newId = customAlphabet('0123456789abcdef', 32);
