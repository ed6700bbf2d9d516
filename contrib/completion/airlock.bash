# bash completion for airlock. The commands and subcommands are read from
# `airlock help --complete` (the binary's one command table) and each
# command's options from its own --help when completing, so they never drift
# from the binary. Installed as share/bash-completion/completions/airlock.
_airlock()
{
  local cur prev cmd i
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      *) cmd=${COMP_WORDS[i]}; break ;;
    esac
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "$(airlock help --complete 2>/dev/null | cut -d' ' -f1) --help --version" -- "$cur"))
    return
  fi
  if [[ $cmd == help ]]; then
    COMPREPLY=($(compgen -W "$(airlock help --complete 2>/dev/null | cut -d' ' -f1)" -- "$cur"))
    return
  fi
  case $prev in
    -p|--policy|-c|--config|-r|--record|-o|--output|--log|--relay-log|--seccomp-out|--key-file|--cacert|--socket|--dir)
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
    --for) COMPREPLY=($(compgen -W "ticket run render" -- "$cur")); return ;;
    --backend) COMPREPLY=($(compgen -W "native docker" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(airlock "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur"))
  else
    local subs
    subs=$(airlock help --complete 2>/dev/null | awk -v c="$cmd" '$1 == c { $1 = ""; print }')
    if [[ -n $subs && $COMP_CWORD -eq $((i + 1)) ]]; then
      COMPREPLY=($(compgen -W "$subs" -- "$cur"))
      return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _airlock airlock
