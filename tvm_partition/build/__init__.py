"""From a Relax module and a Plan to a multi-device Relax VM executable: the build itself
(:mod:`.executable`), MetaSchedule tuning databases and the schedules builds apply (:mod:`.tuning`),
schedule transfer of tuned traces to new extents (:mod:`.transfer`) and split cuts aligned to the
schedules' inner tiles (:mod:`.align`)."""
