// A test harness, not Flamenco: it implements only the parts of Flamenco's documented job
// compiler API that farm/hair_wig_bake.js uses — author.Task(name, type), author.Command(name,
// parameters), task.addCommand, task.addDependency, job.settings (with JOB_TYPE's defaults),
// job.addTask — runs the job type's compileJob on the settings given as JSON, and prints the
// tasks it authored as JSON: {label, settings, tasks: [{name, type, commands, dependencies}]}.
//
//     node tests/flamenco_harness.js farm/hair_wig_bake.js '{"frames": "1-20", ...}'
"use strict";
const fs = require("fs");
const vm = require("vm");

const [script, settingsJson] = process.argv.slice(2);
const author = {
  Task(name, type) {
    if (typeof name !== "string" || typeof type !== "string") throw new Error("Task(name, type) takes strings");
    return {
      name, type, commands: [], dependencies: [],
      addCommand(cmd) { this.commands.push(cmd); },
      addDependency(task) {
        if (!task || typeof task.name !== "string") throw new Error("addDependency takes a task");
        this.dependencies.push(task.name);
      },
    };
  },
  Command(name, parameters) { return { name, parameters }; },
};
const context = vm.createContext({ author, console });
vm.runInContext(fs.readFileSync(script, "utf8"), context, { filename: script });
const jobType = vm.runInContext("JOB_TYPE", context);
const settings = {};
for (const s of jobType.settings) if ("default" in s) settings[s.key] = s.default;
Object.assign(settings, JSON.parse(settingsJson));
for (const s of jobType.settings) {
  if (s.required && (settings[s.key] === undefined || settings[s.key] === "")) {
    process.stderr.write(`setting "${s.key}" is required\n`);
    process.exit(2);
  }
}
const tasks = [];
const job = { settings, addTask(task) { tasks.push(task); } };
try {
  vm.runInContext("compileJob", context)(job);
} catch (err) {
  process.stderr.write(`compileJob: ${err}\n`);
  process.exit(1);
}
const names = new Set();
for (const t of tasks) {
  if (names.has(t.name)) { process.stderr.write(`two tasks named "${t.name}"\n`); process.exit(1); }
  names.add(t.name);
}
process.stdout.write(JSON.stringify({
  label: jobType.label, settings,
  tasks: tasks.map(({ name, type, commands, dependencies }) => ({ name, type, commands, dependencies })),
}, null, 1));
