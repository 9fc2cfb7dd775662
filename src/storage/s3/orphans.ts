/**
 * Garbage of crashed or fenced writers (docs/s3-layout.md, "Garbage"):
 * segments and tail objects of earlier epochs that no stored manifest
 * names.
 */
import { decodeManifest, objectsNamed } from './manifest.js';
import { ObjectNotFound, type ObjectStore } from './object-store.js';
import { epochOfObject, manifestNumber } from './remote-names.js';

/**
 * Delete the segments and tail objects of epochs before `epoch` that no
 * stored manifest names: what a crashed or fenced writer uploaded and
 * never published (or published in manifests since deleted, its
 * clean-up lost with it). Safe once a manifest of `epoch` is stored: no
 * manifest of an earlier epoch is made after it (those writers are
 * fenced), and later ones name only objects a stored manifest names or
 * of their own epochs. Objects of `epoch` and later are never touched
 * (their writer may be uploading them). A manifest that cannot be read
 * (damaged) stops the collection: nothing is deleted on a guess. A listed
 * manifest deleted before it was read (the writer keeps only its last
 * three) may have been superseded by ones the listing missed: the
 * collection starts again (three times at most, then deletes nothing).
 * `namedHere`: what this process names now (its writer's newest manifest
 * may postdate the listing). Returns the names deleted (relative to
 * `folder`).
 */
export async function collectOrphans(objects: ObjectStore, folder: string, id: string, epoch: number, namedHere: () => Iterable<string>): Promise<string[]> {
  attempts: for (let attempt = 0; attempt < 3; attempt++) {
    const listed = (await objects.list(folder)).names.map((x) => x.slice(folder.length));
    const named = new Set<string>();
    for (const name of listed) {
      const n = manifestNumber(name);
      if (n === null) continue;
      let bytes: Buffer;
      try {
        bytes = await objects.getAll(`${folder}${name}`);
      } catch (err) {
        if (err instanceof ObjectNotFound) continue attempts;
        throw err;
      }
      for (const o of objectsNamed(decodeManifest(bytes, n, id))) named.add(o);
    }
    for (const o of namedHere()) named.add(o);
    const orphans = listed.filter((name) => {
      const e = epochOfObject(name);
      return e !== null && e < epoch && !named.has(name);
    });
    if (orphans.length > 0) await objects.remove(orphans.map((o) => `${folder}${o}`));
    return orphans;
  }
  return [];
}
