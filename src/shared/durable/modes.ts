/** Permissions of everything vigil persists: state can hold secrets, so only its owner may read it. */
export const DIR_MODE = 0o700;
export const FILE_MODE = 0o600;
