// SPDX-License-Identifier: GPL-3.0-or-later
//
// hair_wig bake, a Flamenco job type: bakes a shot's hair_wig wigs on the farm in parts — each
// wig whole, or (where its strands do not depend on each other) in strand ranges — with one task
// per part running Blender in the background on hair_wig's scripts/bake.py, and a merge task that
// waits for all of them and writes the baked .blend. A wig's frames depend on the frames before
// them, so the shot is split by independent parts, never by frame chunks.
//
// Install: copy this file into the `scripts` folder next to the flamenco-manager executable and
// restart the Manager (README: "Baking on a Flamenco farm").

const JOB_TYPE = {
  label: "hair_wig Bake",
  description: "Bake hair_wig wigs in parts (by object, and by strand ranges) and merge the parts",
  settings: [
    {
      key: "blendfile", type: "string", subtype: "file_path", required: true,
      eval: "bpy.data.filepath",
      description: "The .blend to bake (on storage every worker sees)",
    },
    {
      key: "wigs", type: "string", required: true,
      eval: "','.join(o.name + ':' + str(len(o.data.curves) if o.type == 'CURVES' else len(o.data.splines)) "
          + "for o in C.scene.objects if o.type in {'CURVES', 'CURVE'} and o.hair_wig.enabled)",
      description: "The wigs to bake, as NAME:STRANDS, comma separated (filled in from the scene: "
          + "Curves hair and legacy Curve wigs)",
    },
    {
      key: "split_wigs", type: "string",
      eval: "','.join(o.name for o in C.scene.objects if o.type == 'CURVES' and o.hair_wig.enabled "
          + "and not (o.hair_wig.use_secondary and o.hair_wig.dynamics_layer in {'STRANDS', 'RODS'}) "
          + "and not len(o.hair_wig.key_poses))",
      description: "The wigs whose strands may be baked in ranges (no Strands or Rods layer, no key poses)",
    },
    {
      key: "frames", type: "string", default: "",
      description: "First and last frame, as START-END, for every wig; empty: each wig's own frame "
          + "range (its Frame Range panel)",
    },
    {
      key: "strands_per_task", type: "int32", default: 25000,
      description: "Strands of a wig baked by one task (wigs that cannot be split go whole)",
    },
    {
      key: "bake_script", type: "string", subtype: "file_path", default: "",
      description: "Empty (the default): the workers run the baker of their installed hair_wig extension. "
          + "Or a repository checkout's scripts/bake.py, where the workers can read it",
    },
    {
      key: "output", type: "string", subtype: "file_path", required: true,
      description: "Where the baked .blend goes",
    },
    {
      key: "parts_dir", type: "string", subtype: "dir_path", required: true,
      description: "Where the tasks leave their part files for the merge (on shared storage)",
    },
  ],
};

function parseFrames(text) {
  if (!text || !text.trim()) return null;          // each wig's own range
  const m = /^\s*(-?\d+)\s*-\s*(-?\d+)\s*$/.exec(text);
  if (!m) throw `frames must be START-END, got "${text}"`;
  const first = parseInt(m[1], 10), last = parseInt(m[2], 10);
  if (last < first) throw `frames ${text}: END is before START`;
  return [first, last];
}

function parseWigs(text) {
  return text.split(",").map((s) => s.trim()).filter((s) => s).map((s) => {
    const cut = s.lastIndexOf(":");
    const count = parseInt(s.slice(cut + 1), 10);
    if (cut < 1 || !(count > 0)) throw `wigs must be NAME:STRANDS, got "${s}"`;
    return { name: s.slice(0, cut), strands: count };
  });
}

// The parts of one wig: [start, stop) strand ranges, or one part for all of it (null).
function partsOf(wig, split, perTask) {
  if (!split || wig.strands <= perTask) return [null];
  const out = [];
  for (let a = 0; a < wig.strands; a += perTask) out.push([a, Math.min(a + perTask, wig.strands)]);
  return out;
}

function partPath(dir, wig, range) {
  const safe = wig.name.replace(/[^A-Za-z0-9_.-]/g, "_");
  return `${dir.replace(/\/+$/, "")}/${safe}${range ? `_${range[0]}-${range[1]}` : ""}.npz`;
}

// What runs the baker of the installed extension, wherever its repository put it (the same as
// hair_wig's operators/batch.py COMMAND; a test checks they agree).
const EXTENSION_BAKER = "import importlib, sys; importlib.import_module(next(n for n in list(sys.modules) "
    + "if n.startswith('bl_ext.') and n.count('.') == 2 and n.endswith('.hair_wig')) + '.operators.batch').cli()";

function blenderTask(name, blendfile, script, args) {
  const task = author.Task(name, "blender");
  task.addCommand(author.Command("blender-render", {
    exe: "{blender}",
    exeArgs: "{blenderArgs}",
    argsBefore: [],
    blendfile: blendfile,
    args: [...(script ? ["--python", script] : ["--python-expr", EXTENSION_BAKER]), "--", ...args],
  }));
  return task;
}

function compileJob(job) {
  const s = job.settings;
  const range = parseFrames(s.frames);
  const perTask = s.strands_per_task;
  if (!(perTask > 0)) throw `strands_per_task must be above 0, got ${perTask}`;
  const split = new Set((s.split_wigs || "").split(",").map((x) => x.trim()).filter((x) => x));
  const wigs = parseWigs(s.wigs);
  if (!wigs.length) throw "no wigs to bake";
  const frames = range ? ["--frames", String(range[0]), String(range[1])] : [];
  const parts = [];
  const tasks = [];
  for (const wig of wigs) {
    for (const range of partsOf(wig, split.has(wig.name), perTask)) {
      const path = partPath(s.parts_dir, wig, range);
      // the part tasks make the parts folder (the first to run creates it)
      const args = ["--objects", wig.name, ...frames, "--part", path, "--make-folders"];
      if (range) args.splice(2, 0, "--strands", `${range[0]}:${range[1]}`);
      const task = blenderTask(`bake ${wig.name}${range ? ` ${range[0]}:${range[1]}` : ""}`,
                               s.blendfile, s.bake_script, args);
      job.addTask(task);
      tasks.push(task);
      parts.push(path);
    }
  }
  const merge = blenderTask("merge", s.blendfile, s.bake_script, ["--merge", ...parts, "--output", s.output]);
  for (const task of tasks) merge.addDependency(task);
  job.addTask(merge);
}
