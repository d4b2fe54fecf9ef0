export declare const ID_PATTERN = "^[0-9a-f]{32}$";
export declare const ID_RE: RegExp;
/** TypeBox schema of an id. */
export declare const Id: import("@sinclair/typebox").TString;
export declare function isId(s: unknown): s is string;
