/** Types of scripts/folder-cycles.mjs, for test/lint/folder-cycles.test.ts. */

/** `from -> to` (top folders of src/) to the imports behind the edge (`file: specifier`). */
export type FolderEdges = Map<string, string[]>;
export declare function folderEdges(srcDir?: string): FolderEdges;
export declare function folderCycles(edges: FolderEdges): string[][];
export declare function describeCycles(edges: FolderEdges, cycles: ReadonlyArray<ReadonlyArray<string>>): string;
