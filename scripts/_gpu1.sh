set -u
export OUT
CORPUS_ONLY=slow_transform,sync_in_loop,python_elements,empty_cache,launch_graph,channels_last,strided_add,pageable_copy,foreach_off CORPUS_MODES=traces CORPUS_DEADLINE_S=270 bash scripts/gpu_record.sh corpus36 > $OUT/all.log 2>&1
CORPUS_ONLY=graph_break,variance,slow_step CORPUS_MODES=time CORPUS_DEADLINE_S=60 bash scripts/gpu_record.sh corpus36 generate36 >> $OUT/all.log 2>&1
rm -f $OUT/recordings.tgz
tail -40 $OUT/all.log
